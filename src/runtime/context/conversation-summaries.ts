import type { SummaryRecord } from '../../domain/model.js';
import type { ModelCallRecord } from '../../domain/ports/flow.js';
import type { ModelProvider } from '../../domain/ports/model-provider.js';
import type { SummaryBacklog } from '../../domain/ports/store.js';
import { BudgetExceeded, type CallPayer, reserveCall, settleCall } from '../budget.js';
import type { TurnDependencies, TurnScope, TurnSummaries } from '../turn/turn-context.js';
import { SUMMARY_MAX_MESSAGES, summaryChunk, summaryDue, type SummarizeSettings } from './summary-backlog.js';
import { storableSummary, summaryRequest } from './summary-prompt.js';

/** How a summary run ended, as `palaver_summaries_total{outcome}` counts it. */
export type SummaryOutcome = 'written' | 'failed' | 'over_budget' | 'busy' | 'taken_over';

export interface ConversationSummariesOptions extends SummarizeSettings {
  /** The model that writes summaries (`agent.memory.summarize.model`, else the primary). */
  readonly provider: ModelProvider;
  /**
   * How long a writer holds a conversation's summary claim: longer than its model call can take (the model's timeout
   * times its attempts), so a live writer keeps it and a crashed one's runs out.
   */
  readonly claimTtlMs: number;
}

/**
 * Rolling summaries of long conversations (`agent.memory.summarize`). After a turn's closing write, {@link afterTurn}
 * looks at what of the conversation no summary covers and, when a summary is due, writes its next version in the
 * background: one model call reads the previous version and the older messages, and its answer is stored with the
 * call's cost in one transaction, under the conversation's summary claim (one writer across processes). Turns read
 * the newest stored version ({@link latest}); a run that fails or dies stores nothing, and the next turn tries again.
 */
export class ConversationSummaries implements TurnSummaries {
  readonly settings: SummarizeSettings;
  readonly #provider: ModelProvider;
  readonly #claimTtlMs: number;
  /** The runs of this process, by session: one at a time per conversation. */
  readonly #running = new Map<string, Promise<void>>();

  constructor(options: ConversationSummariesOptions) {
    this.settings = { afterTokens: options.afterTokens, keepRecentMessages: options.keepRecentMessages };
    this.#provider = options.provider;
    this.#claimTtlMs = options.claimTtlMs;
  }

  /** The newest summary of the conversation's current context (none before a reset or an operator's end). */
  latest(deps: Pick<TurnDependencies, 'store'>, sessionId: string): Promise<SummaryRecord | undefined> {
    return deps.store.summaries.latest(sessionId);
  }

  /**
   * Starts writing the conversation's next summary when one is due, after the turn's closing write: not awaited, so
   * it never delays a reply. A run already going for the conversation in this process is left to finish. Each run
   * makes at most one model call; a failure is logged and counted, and only the next turn tries again.
   */
  afterTurn(scope: TurnScope): void {
    const sessionId = scope.session.id;
    if (this.#running.has(sessionId)) return;
    const run = this.#summarise(scope)
      .catch((error: unknown) => {
        scope.deps.metrics.summaries.inc({ outcome: 'failed' });
        scope.log.error({ err: error }, 'conversation summary failed; the next turn tries again');
      })
      .finally(() => this.#running.delete(sessionId));
    this.#running.set(sessionId, run);
  }

  /** Resolves once the runs going now have ended (a closing pipeline waits for them within its grace period). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running.values()]);
  }

  async #summarise(scope: TurnScope): Promise<void> {
    const { deps, session } = scope;
    const backlog = await deps.store.summaries.backlog(session.id, this.settings.keepRecentMessages);
    if (!summaryDue(backlog, this.settings, deps.agent)) return;
    const claimId = await deps.store.summaries.claim({ sessionId: session.id, owner: scope.lease.owner, now: deps.now().getTime(), ttlMs: this.#claimTtlMs });
    if (claimId === undefined) {
      this.#count(scope, 'busy');
      scope.log.debug("another process is writing this conversation's summary");
      return;
    }
    const payer: CallPayer = {
      reservationId: claimId,
      owner: scope.lease.owner,
      liveWithinMs: scope.lease.leaseMs,
      userId: scope.user.id,
      sessionId: session.id,
      timeZone: scope.timeZone,
    };
    try {
      await this.#write(scope, backlog, payer);
    } catch (error) {
      // Whatever went wrong, the claim goes (a version stored has ended it already): the next turn may try again.
      await this.#giveUp(scope, payer);
      if (!(error instanceof BudgetExceeded)) throw error;
      this.#count(scope, 'over_budget');
      scope.log.info({ budget: error.budget }, `conversation summary skipped: ${error.message}`);
    }
  }

  /** One summary call under the claim `payer.reservationId`, and its version stored with its cost. */
  async #write(scope: TurnScope, backlog: SummaryBacklog, payer: CallPayer): Promise<void> {
    const { deps, session } = scope;
    const { store } = deps;
    const claimId = payer.reservationId;
    const afterSeq = Math.max(backlog.contextStart, backlog.latest?.toSeq ?? 0);
    const older = await store.messages.listBetween(session.id, { afterSeq, beforeSeq: backlog.recentFrom, audience: 'display', limit: SUMMARY_MAX_MESSAGES });
    const messages = summaryChunk(older);
    const last = messages[messages.length - 1];
    if (last === undefined) return store.summaries.release(session.id, claimId);
    const request = summaryRequest(backlog.latest, messages, { ...this.settings, timeZone: scope.timeZone });
    const invocation = { provider: this.#provider, request: { ...request, correlationId: scope.correlationId }, path: 'summary' };
    // Money is reserved before it is spent, as a turn's calls reserve: a call that could cross a cap is not made.
    if (deps.budgets !== undefined) await reserveCall(deps, deps.budgets, payer, invocation);
    const response = await deps.invokeModel(invocation);
    const record: ModelCallRecord = { model: response.model, usage: response.usage, fallback: false, responseId: response.responseId, path: 'summary' };
    const usage = await deps.billing.usageOf([record], scope.currency, deps.now());
    const { text, cut } = storableSummary(response.text, this.settings);
    if (cut) scope.log.warn({ model: response.model }, 'conversation summary longer than asked for; cut');
    // The call is paid for whatever its answer: its cost is recorded with the version, or alone when none is stored.
    const stored = await store.transaction(async (tx) => {
      const added =
        text === ''
          ? undefined
          : await tx.summaries.add(
              {
                sessionId: session.id,
                fromSeq: backlog.contextStart,
                toSeq: last.seq,
                text,
                model: response.model,
                inputTokens: usage.inputTokens,
                outputTokens: usage.outputTokens,
                cost: usage.cost,
                currency: scope.currency,
              },
              claimId,
            );
      await settleCall(deps, tx, payer, { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, cost: usage.cost, currency: scope.currency });
      return added;
    });
    deps.metrics.addCost(scope.currency, usage.cost);
    const facts = {
      model: response.model,
      messages: messages.length,
      toSeq: last.seq,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cost: usage.cost,
    };
    if (text === '') throw new Error(`the model ${response.model} answered the summary call with no text`);
    if (stored === undefined) {
      this.#count(scope, 'taken_over');
      scope.log.warn(facts, 'conversation summary not stored: its claim ran out and another process took it over');
      return;
    }
    this.#count(scope, 'written');
    scope.log.info({ ...facts, version: stored.version }, 'conversation summary written');
  }

  /** Gives the run's claim and budget reservation up (nothing when they are gone already); best effort: a claim also runs out. */
  async #giveUp(scope: TurnScope, payer: CallPayer): Promise<void> {
    const { store, budgets } = scope.deps;
    try {
      await store.summaries.release(payer.sessionId, payer.reservationId);
      if (budgets !== undefined) await store.spend.release(payer.reservationId, payer.owner);
    } catch (error) {
      scope.log.warn({ err: error }, 'could not give up a summary claim; it runs out on its own');
    }
  }

  #count(scope: TurnScope, outcome: SummaryOutcome): void {
    scope.deps.metrics.summaries.inc({ outcome });
  }
}
