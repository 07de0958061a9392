import type { ApprovalRequirement, ToolApproval } from '../../domain/approval.js';
import type { ToolCallRecord } from '../../domain/model.js';
import type { TurnProgress } from '../../domain/ports/channel.js';
import type { ModelCall, ModelCallRecord } from '../../domain/ports/flow.js';
import type { ModelToolCall } from '../../domain/ports/model-provider.js';
import type { OpenTurnRecord, Store } from '../../domain/ports/store.js';
import type { ToolCallResult } from '../../domain/ports/tool-dispatch.js';

/** A tool call this turn ran, with what came back, for idempotency within the turn and for the audit records. */
export interface ToolRun {
  readonly call: ModelToolCall;
  readonly result: ToolCallResult;
}

/** A tool call waiting for someone's decision, and what they are asked. */
export interface ApprovalQuestion {
  readonly call: ModelToolCall;
  readonly requirement: ApprovalRequirement;
}

/** A model call as the journal keeps it: which model set it went to, and what came back. */
interface RecordedModelCall extends ModelCall {
  /** The named model set (`ModelChoice.models`), null for the agent's own. */
  readonly models: string | null;
}

/** Who the journal writes for: the turn's batch and the person it answers. */
export interface JournalTurn {
  readonly sessionId: string;
  readonly userId: string;
  readonly correlationId: string;
  /** The lease owner working on the turn. */
  readonly owner: string;
  readonly inboundIds: readonly string[];
  /**
   * Checks in a write's transaction that this process still owns the conversation (see `ConversationOwnership`);
   * throws `FencedOut` when it does not. Every write of the turn goes through it.
   */
  readonly fence?: ((tx: Store) => Promise<void>) | undefined;
  /**
   * The fence of the turn's closing write when that write also ends the claim: the reply goes out after it under the
   * messages' lease, so the conversation needs no write of its own to be free. Undefined: {@link fence} is used.
   */
  readonly endClaim?: ((tx: Store) => Promise<void>) | undefined;
}

/**
 * A turn's progress, as a record that is written as it happens and read back after a crash: the model calls made
 * (each response stored as it completes) and the tool calls run (stored `running` before they are dispatched, then
 * with their result). A resumed turn re-runs its flow over this record: the n-th model call returns the n-th recorded
 * response without asking the model (or paying for it again), a finished tool call returns its recorded result
 * without running, and a call cut off while running runs again under the same idempotency key.
 *
 * Nothing is written until the turn acts: its first tool call is recorded as running, together with the turn and the
 * model call that asked for it, in one transaction before it is dispatched. A turn cut off before that has done
 * nothing worth keeping and simply starts again, and a plain exchange (one model call, then the reply) writes no
 * journal at all. Everything goes in the transaction that stores the reply ({@link end}).
 */
export class TurnJournal {
  /** The turn's id, stable across a resume; its reply is stored (and streamed) under it. */
  readonly id: string;
  /** Model calls made so far, replayed ones included: a failed turn still records what it spent, once. */
  readonly modelCalls: ModelCallRecord[] = [];
  /** Tool calls run so far, by the model's call id. */
  readonly toolRuns = new Map<string, ToolRun>();
  readonly #store: Store;
  readonly #turn: JournalTurn;
  readonly #recordedModelCalls: readonly RecordedModelCall[];
  /** The journal's tool calls, by the model's call id. */
  readonly #recordedTools: ReadonlyMap<string, ToolCallRecord>;
  /** The turn's approval requests, by the model's call id: a resumed turn reads its decisions here. */
  readonly #approvals: ReadonlyMap<string, ToolApproval>;
  /** The call this run asks someone to approve: the turn ends after its round, waiting (see {@link suspend}). */
  #asking: ApprovalQuestion | undefined;
  /** Model calls billed before (when the turn stopped to ask for an approval), by their place in the turn. */
  readonly #billedModelCalls: number;
  /** The replayed records of those calls: not billed again. */
  readonly #billed = new Set<ModelCallRecord>();
  #nextModelCall = 0;
  /** How many of {@link modelCalls} are in the store's journal (replayed ones were found there). */
  #keptModelCalls = 0;
  /** Whether the recorded model calls still match the flow's (a flow that asks otherwise ends the replay). */
  #replaying: boolean;
  /** The turn's record exists in the store (written with its first step, or found there on resume). */
  #open: boolean;
  #writes: Promise<unknown> = Promise.resolve();
  /** A model call's record not written yet (see {@link recordModelCall}). */
  #deferred: ((store: Store) => Promise<void>) | undefined;
  #streamedText = '';
  #keptOnCommit = 0;

  private constructor(
    store: Store,
    id: string,
    turn: JournalTurn,
    recorded:
      | { modelCalls: readonly RecordedModelCall[]; tools: ReadonlyMap<string, ToolCallRecord>; approvals: ReadonlyMap<string, ToolApproval> }
      | undefined,
  ) {
    this.#store = store;
    this.id = id;
    this.#turn = turn;
    this.#recordedModelCalls = recorded?.modelCalls ?? [];
    this.#recordedTools = recorded?.tools ?? new Map();
    this.#approvals = recorded?.approvals ?? new Map();
    this.#billedModelCalls = Math.max(0, ...[...this.#approvals.values()].map((approval) => approval.modelCalls));
    this.#open = recorded !== undefined;
    this.#replaying = this.#recordedModelCalls.length > 0;
  }

  /** A journal for a new turn; nothing is stored until the turn goes on past a model call (see the class). */
  static start(store: Store, id: string, turn: JournalTurn): TurnJournal {
    return new TurnJournal(store, id, turn, undefined);
  }

  /** The journal of an open turn a crash (or a failed store) cut off, read back to continue from. */
  static async resume(store: Store, open: OpenTurnRecord, turn: JournalTurn): Promise<TurnJournal> {
    const [calls, tools, approvals] = await Promise.all([
      store.turns.listModelCalls(open.id),
      store.toolCalls.listByTurn(open.id),
      store.approvals.forTurn(open.id),
    ]);
    const prefix = `${open.id}:`;
    return new TurnJournal(store, open.id, turn, {
      modelCalls: calls.map((call) => JSON.parse(call) as RecordedModelCall),
      tools: new Map(tools.map((record) => [record.callId.slice(prefix.length), record])),
      approvals: new Map(approvals.map((approval) => [approval.callId, approval])),
    });
  }

  /**
   * Where the next model call stands: its place in the turn, and the recorded call when the turn is replaying one
   * made before the crash (asked of the same model set). The first call that differs ends the replay.
   */
  nextModelCall(models: string | undefined): { readonly seq: number; readonly recorded?: ModelCall } {
    const seq = this.#nextModelCall++;
    const recorded = this.#replaying ? this.#recordedModelCalls[seq] : undefined;
    if (recorded !== undefined && recorded.models === (models ?? null)) {
      if (seq < this.#billedModelCalls) this.#billed.add(recorded.record);
      this.modelCalls.push(recorded.record);
      this.#keptModelCalls = this.modelCalls.length;
      return { seq, recorded: { response: recorded.response, record: recorded.record } };
    }
    this.#replaying = false;
    return { seq };
  }

  /**
   * Stores a completed model call (its response and tokens) at its place in the turn, with the turn's next write:
   * the first tool call it asked for, recorded as running before it is dispatched, or the next model call
   * ({@link flush}). A turn whose reply follows at once stores nothing here, a tool round costs one commit, and a
   * crash before that write costs at most this one call again: nothing acted on it yet.
   */
  async recordModelCall(seq: number, models: string | undefined, call: ModelCall): Promise<void> {
    this.modelCalls.push(call.record);
    const kept = this.modelCalls.length;
    const recorded = JSON.stringify({ models: models ?? null, response: call.response, record: call.record } satisfies RecordedModelCall);
    const write = async (store: Store) => {
      await store.turns.recordModelCall(this.id, seq, recorded);
      // Counted once the write's transaction commits (see #write).
      this.#keptOnCommit = kept;
    };
    // Tools the provider called itself (hosted MCP) acted already: such a call is kept at once, like a tool call.
    if ((call.response.hostedToolCalls?.length ?? 0) > 0) await this.#write(write);
    else this.#deferred = write;
  }

  /** Writes a model call kept back by {@link recordModelCall}: the turn goes on to another model call. */
  flush(): Promise<void> {
    return this.#deferred === undefined ? Promise.resolve() : this.#write(async () => {});
  }

  /**
   * The key a tool uses for the side effects it makes elsewhere: the same for a call (by the model's call id) every
   * time the turn runs, so a call cut off while running and run again is recognised by what it called.
   */
  idempotencyKey(callId: string): string {
    return `${this.id}:${callId}`;
  }

  /** The recorded result of a tool call that finished before the turn was cut off; undefined when it must run. */
  finishedToolCall(callId: string): ToolCallResult | undefined {
    const record = this.#recordedTools.get(callId);
    return record === undefined || record.status === 'running' || record.result === null ? undefined : (JSON.parse(record.result) as ToolCallResult);
  }

  /**
   * Records that a tool call is about to be dispatched (a call recorded before keeps its record), in one transaction
   * with the model call that asked for it when that is not stored yet.
   */
  toolStarted(call: ModelToolCall): Promise<void> {
    return this.#write((store) => this.#start(store, call));
  }

  /**
   * Records a dispatched tool call's result; with `started: false` (a read-only tool's call, not recorded before it
   * ran) the call's record too, in the same write, with the model call that asked for it when that is not stored yet.
   */
  toolFinished(call: ModelToolCall, result: ToolCallResult, { started }: { readonly started: boolean }): Promise<void> {
    const outcome = { status: result.isError ? ('failed' as const) : ('succeeded' as const), result: JSON.stringify(result) };
    return this.#write(async (store) => {
      // Not started (a read-only tool): the call and its result are one insert.
      if (started) await store.toolCalls.finish(this.idempotencyKey(call.callId), outcome);
      else await store.toolCalls.record(this.#callRecord(call), outcome);
    });
  }

  #callRecord(call: ModelToolCall) {
    return {
      callId: this.idempotencyKey(call.callId),
      sessionId: this.#turn.sessionId,
      userId: this.#turn.userId,
      correlationId: this.#turn.correlationId,
      name: call.name,
      arguments: call.arguments,
      turnId: this.id,
    };
  }

  async #start(store: Store, call: ModelToolCall): Promise<void> {
    await store.toolCalls.start(this.#callRecord(call));
  }

  /** `calls` without those billed before the turn stopped to ask for an approval (replayed now): each is paid once. */
  unbilled(calls: readonly ModelCallRecord[]): readonly ModelCallRecord[] {
    return this.#billed.size === 0 ? calls : calls.filter((call) => !this.#billed.has(call));
  }

  /** The approval request of a call of this turn (recorded before a resume), if it has one. */
  approvalOf(callId: string): ToolApproval | undefined {
    return this.#approvals.get(callId);
  }

  /** The call this run asks someone to approve, if any. */
  get asking(): ApprovalQuestion | undefined {
    return this.#asking;
  }

  /** Notes that `question.call` waits for a decision: the turn ends after this round, its journal kept. */
  ask(question: ApprovalQuestion): void {
    this.#asking = question;
  }

  /**
   * Keeps the journal, in the transaction `tx` that stores the approval question: the turn with its batch, and the
   * model call that asked not written yet, so that the decision resumes it where it stopped; with `endClaim`, the
   * claim ends with that transaction too.
   */
  async suspend(tx: Store, endClaim: boolean): Promise<void> {
    await this.#writes.catch(() => undefined);
    await ((endClaim ? this.#turn.endClaim : undefined) ?? this.#turn.fence)?.(tx);
    if (!this.#open) {
      await tx.turns.open({ id: this.id, sessionId: this.#turn.sessionId, owner: this.#turn.owner, inboundIds: this.#turn.inboundIds });
      this.#open = true;
    }
    const deferred = this.#deferred;
    this.#deferred = undefined;
    await deferred?.(tx);
    this.#keptModelCalls = this.modelCalls.length;
  }

  /**
   * Forgets the journal, in the transaction `tx` that stores the turn's reply, if the turn still owns its conversation;
   * with `endClaim`, the claim ends with that transaction too (where the turn was given a closing fence).
   */
  async end(tx: Store, endClaim: boolean): Promise<void> {
    await this.#writes.catch(() => undefined);
    await ((endClaim ? this.#turn.endClaim : undefined) ?? this.#turn.fence)?.(tx);
    if (this.#open) await tx.turns.close(this.id);
  }

  /**
   * Confirms the turn still owns its conversation, for a step whose record is written elsewhere (a dispatcher that
   * records its calls itself). @throws FencedOut when it does not.
   */
  async confirmOwnership(): Promise<void> {
    // The model call that asked for the dispatch is kept first, as a tool call's start would keep it.
    if (this.#deferred !== undefined) return this.#write(async () => {});
    const fence = this.#turn.fence;
    if (fence !== undefined) await this.#store.transaction(fence);
  }

  /**
   * Model calls made and paid for that are not in the store's journal: a run that ends without its closing
   * transaction loses them (the next run asks the model again), so their cost is recorded on their own.
   */
  get unkeptModelCalls(): readonly ModelCallRecord[] {
    return this.modelCalls.slice(this.#keptModelCalls);
  }

  /** The text streamed to the channel since the last tool call: what the person sees as the reply so far. */
  get streamedText(): string {
    return this.#streamedText;
  }

  /** Follows the text the person is shown, as progress reaches the channel. */
  noteProgress(event: TurnProgress): void {
    if (event.type === 'text_delta') this.#streamedText += event.delta;
    else if (event.type === 'tool_call' || event.type === 'discard') this.#streamedText = '';
  }

  /**
   * Runs journal writes one after another; the first one also records the turn with its batch, in the same
   * transaction, so a stored step always has its turn.
   */
  #write(step: (store: Store) => Promise<void>): Promise<void> {
    const write = this.#writes.then(async () => {
      const deferred = this.#deferred;
      this.#deferred = undefined;
      const steps = async (store: Store) => {
        await deferred?.(store);
        await step(store);
      };
      const fence = this.#turn.fence;
      if (this.#open) {
        if (fence === undefined && deferred === undefined) return step(this.#store);
        await this.#store.transaction(async (tx) => {
          await fence?.(tx);
          await steps(tx);
        });
      } else {
        await this.#store.transaction(async (tx) => {
          await fence?.(tx);
          await tx.turns.open({ id: this.id, sessionId: this.#turn.sessionId, owner: this.#turn.owner, inboundIds: this.#turn.inboundIds });
          await steps(tx);
        });
        this.#open = true;
      }
      this.#keptModelCalls = Math.max(this.#keptModelCalls, this.#keptOnCommit);
    });
    this.#writes = write.catch(() => undefined);
    return write;
  }
}
