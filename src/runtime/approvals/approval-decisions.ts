import type { ApprovalDecision, ToolApproval } from '../../domain/approval.js';
import { newId } from '../../domain/ids.js';
import type { InboundRecord } from '../../domain/model.js';
import type { ApprovalOutcome } from '../../domain/ports/channel.js';
import type { Store } from '../../domain/ports/store.js';
import { systemText } from '../../i18n/index.js';
import type { TurnDependencies, TurnRequest } from '../turn/turn-context.js';

/** Who decides: the person asked (by the account their channel verified), an operator, or the expiry. */
export type ApprovalActor =
  | { readonly kind: 'person'; readonly channel: string; readonly accountId: string; readonly conversationId?: string }
  | { readonly kind: 'operator'; readonly name: string; readonly operatorId?: string | null }
  | { readonly kind: 'expiry' };

/** What deciding needs: the store, the clock, and how the waiting turn is asked to go on. */
export interface ApprovalDecisionsOptions {
  readonly deps: Pick<TurnDependencies, 'store' | 'now' | 'logger' | 'metrics' | 'agent'>;
  /** This process's lease: the record of a decision is accepted under it (and held at once). */
  readonly lease: TurnRequest['lease'];
  /** Answers the session's held messages here (the waiting turn's answer first): see `Pipeline.answerHeld`. */
  readonly answerHeld: (session: { readonly id: string; readonly channel: string }) => Promise<number>;
}

/**
 * Decides approval requests. The decision is one transaction: the guarded update that lets only the first decision
 * through (across processes), the answer that joins the waiting turn's batch (the person's own words, or a record of
 * the decision in their language), the hold on the conversation lifted, and the operators' audit row. Then the turn
 * goes on from its journal wherever its channel runs (here at once; elsewhere at that process's next recovery round).
 */
export class ApprovalDecisions {
  readonly #options: ApprovalDecisionsOptions;

  constructor(options: ApprovalDecisionsOptions) {
    this.#options = options;
  }

  /**
   * Takes `decision` on the request `approvalId` for `actor`. `answer`: the person's held messages that answered in
   * words; they join the turn instead of a record of the decision. `messageId`: the channel's id for that record
   * (`DecideOptions.messageId`).
   */
  async decide(
    approvalId: string,
    decision: ApprovalDecision | 'expired',
    actor: ApprovalActor,
    options: { readonly reason?: string | null; readonly answer?: readonly InboundRecord[]; readonly messageId?: string | undefined } = {},
  ): Promise<ApprovalOutcome> {
    const { store } = this.#options.deps;
    const approval = await store.approvals.get(approvalId);
    if (approval === undefined) return { kind: 'not_found' };
    const refused = refusal(approval, actor);
    if (refused !== undefined) return refused;
    const now = this.#options.deps.now().getTime();
    const decided = await store.transaction(async (tx) => {
      if (!(await tx.approvals.decide(approval.id, { status: decision, by: actorName(actor), reason: options.reason ?? null, now }))) return false;
      const answers = options.answer ?? [await this.#decisionRecord(tx, approval, decision, options.messageId ?? null)];
      for (const answer of answers) await tx.turns.attach(approval.turnId, answer.id);
      await tx.approvals.release(approval.sessionId);
      await tx.adminActions.record({
        action: 'approval',
        actor: actorName(actor),
        ...(actor.kind === 'operator' ? { operatorId: actor.operatorId ?? null } : {}),
        sessionId: approval.sessionId,
        userId: approval.userId,
        details: { approvalId: approval.id, tool: approval.tool, shown: approval.summary, decision, reason: options.reason ?? null },
      });
      return true;
    });
    if (!decided) return this.#undecided(approval, actor, now);
    this.#options.deps.metrics.toolApprovals.inc({ decision });
    this.#options.deps.logger.info(
      { approvalId: approval.id, sessionId: approval.sessionId, tool: approval.tool, decision, by: actorName(actor) },
      'tool call approval decided; its turn goes on',
    );
    await this.#options.answerHeld({ id: approval.sessionId, channel: approval.channel }).catch((error: unknown) => {
      this.#options.deps.logger.warn({ err: error, approvalId: approval.id }, 'could not resume the turn here; the next recovery round does');
    });
    return decision === 'expired' ? { kind: 'expired' } : { kind: 'decided', status: decision };
  }

  /** Declines every request whose time ran out (`tools.approvalTimeoutMinutes`); resolves how many this process did. */
  async expireDue(limit = 50): Promise<number> {
    const due = await this.#options.deps.store.approvals.listExpired(this.#options.deps.now().getTime(), limit);
    let expired = 0;
    for (const approval of due) {
      const outcome = await this.decide(approval.id, 'expired', { kind: 'expiry' });
      if (outcome.kind === 'expired') expired++;
    }
    return expired;
  }

  /**
   * This decision did not go through: the request was decided before, or a yes or no came after its time (then the
   * expiry is taken now, and that is the answer). Still pending and in time: only the expiry came early (another
   * process's clock), and nothing changed.
   */
  async #undecided(approval: ToolApproval, actor: ApprovalActor, now: number): Promise<ApprovalOutcome> {
    const current = await this.#options.deps.store.approvals.get(approval.id);
    if (current === undefined) return { kind: 'not_found' };
    if (current.status !== 'pending')
      return current.status === 'expired' && actor.kind !== 'expiry' ? { kind: 'expired' } : { kind: 'already', status: current.status };
    if (current.expiresAt.getTime() <= now && actor.kind !== 'expiry') {
      await this.decide(approval.id, 'expired', { kind: 'expiry' });
      return { kind: 'expired' };
    }
    return { kind: 'not_found' };
  }

  /**
   * The decision as the person's side of the conversation records it (a button pressed, an operator's word, the
   * expiry), accepted into the inbox held, so the turn's resumption is durable like any message.
   */
  async #decisionRecord(tx: Store, approval: ToolApproval, decision: ApprovalDecision | 'expired', messageId: string | null): Promise<InboundRecord> {
    const { agent } = this.#options.deps;
    const text = systemText(approval.language, `approval.${decision}`, undefined, agent.defaultLanguage);
    const accepted = await tx.inbound.accept(
      {
        channel: approval.channel,
        conversationId: approval.conversationId,
        accountId: approval.accountId,
        accountNamespace: approval.accountNamespace,
        userId: approval.userId,
        sessionId: approval.sessionId,
        text,
        messageId,
        dedupeKey: `approval:${approval.id}`,
        correlationId: newId(),
        languageHint: approval.language,
        displayName: null,
        conversationKind: approval.conversationKind,
      },
      { owner: this.#options.lease.owner, leaseMs: 0 },
    );
    const record = accepted.accepted ? accepted.record : accepted.existing;
    // Held like the conversation's other messages (the request still holds it here): whoever answers them takes it.
    await tx.inbound.hold([record.id]);
    return record;
  }
}

function refusal(approval: ToolApproval, actor: ApprovalActor): ApprovalOutcome | undefined {
  if (actor.kind === 'expiry') return undefined;
  if (actor.kind === 'operator') return approval.by === 'operator' ? undefined : { kind: 'refused', reason: 'not_yours' };
  if (approval.by === 'operator') return { kind: 'refused', reason: 'operator' };
  const theirs =
    approval.channel === actor.channel &&
    approval.accountId === actor.accountId &&
    (actor.conversationId === undefined || approval.conversationId === actor.conversationId);
  return theirs ? undefined : { kind: 'refused', reason: 'not_yours' };
}

function actorName(actor: ApprovalActor): string {
  if (actor.kind === 'person') return `person:${actor.channel}:${actor.accountId}`;
  if (actor.kind === 'operator') return actor.name;
  return 'expiry';
}
