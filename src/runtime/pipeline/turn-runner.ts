import type { ToolApproval } from '../../domain/approval.js';
import { FencedOut } from '../../domain/errors.js';
import type { ApprovalDecisions } from '../approvals/approval-decisions.js';
import { answerInWords } from '../approvals/answer-in-words.js';
import type { InboundRecord } from '../../domain/model.js';
import type { AcceptOptions, Channel } from '../../domain/ports/channel.js';
import type { Store } from '../../domain/ports/store.js';
import type { Participant } from '../conversation-cache.js';
import type { Inbox } from '../inbox.js';
import { runTurn } from '../turn/run-turn.js';
import { byAttempts, DEFAULT_MAX_TURN_ATTEMPTS, retryDelayMs } from '../turn/turn-attempts.js';
import { formBatch } from '../turn/turn-batch.js';
import type { AcceptedMessage, TurnDependencies, TurnRequest } from '../turn/turn-context.js';
import type { ConversationOwnership, TurnClaim } from './conversation-ownership.js';
import { conversationKey, quietWindowOf } from './keys.js';
import type { ProcessLease } from './lease.js';

type Batch = readonly [AcceptedMessage, ...AcceptedMessage[]];

/** What running turns needs. */
export interface TurnRunnerOptions {
  readonly deps: TurnDependencies;
  /** The inbox whose `runBatch` calls {@link TurnRunner.runBatch}; messages to answer (again) are queued in it. */
  readonly inbox: Inbox<AcceptedMessage>;
  /** The lease the turns' messages and outbox parts are held under (this process). */
  readonly lease: ProcessLease;
  /** Who owns which conversation across the processes on the database: a turn runs only under its claim. */
  readonly ownership: ConversationOwnership;
  /** See `PipelineOptions.maxTurnAttempts` (default {@link DEFAULT_MAX_TURN_ATTEMPTS}). */
  readonly maxTurnAttempts?: number | undefined;
  /** Whether the pipeline is closing: a retry that comes due then is left to the next process. */
  readonly isStopped: () => boolean;
  /** Decides approval requests a person answers in words (see {@link TurnRunner.runBatch}). */
  readonly approvals: () => ApprovalDecisions;
}

/**
 * Runs the turns the inbox hands over: forms the batch (a crash-cut turn resumes with its own), holds a paused
 * conversation's messages, answers (or, after `maxTurnAttempts`, apologises), and retries a turn that could not be
 * stored after a growing wait.
 */
export class TurnRunner {
  readonly #deps: TurnDependencies;
  readonly #inbox: Inbox<AcceptedMessage>;
  readonly #lease: ProcessLease;
  readonly #ownership: ConversationOwnership;
  readonly #maxTurnAttempts: number;
  readonly #isStopped: () => boolean;
  readonly #approvals: () => ApprovalDecisions;
  /** Messages accepted by this process whose first turn has not begun: no journal can hold them yet. */
  readonly #fresh = new Set<string>();
  /** Reply plans being carried out that a new message of their conversation interrupts, by conversation. */
  readonly #interruptible = new Map<string, AbortController>();

  constructor(options: TurnRunnerOptions) {
    this.#deps = options.deps;
    this.#inbox = options.inbox;
    this.#lease = options.lease;
    this.#ownership = options.ownership;
    this.#maxTurnAttempts = options.maxTurnAttempts ?? DEFAULT_MAX_TURN_ATTEMPTS;
    this.#isStopped = options.isStopped;
    this.#approvals = options.approvals;
  }

  /**
   * Queues a message this process just stored, and interrupts a reply plan of its conversation that the person's
   * new message cuts short (`interruptOnNewMessage`).
   */
  queueAccepted(channel: Channel, participant: Participant, record: InboundRecord, options: AcceptOptions = {}): void {
    this.#fresh.add(record.id);
    this.queue(channel, participant, record, options.signal, options.left);
    // The person wrote again while a reply plan of the conversation runs (`interruptOnNewMessage`): its rest is dropped.
    this.#interruptible.get(conversationKey(record.channel, record.conversationId))?.abort();
  }

  /** Queues a message for its conversation's next turn, when the channel's quiet window allows. */
  queue(channel: Channel, participant: Participant, inbound: InboundRecord, signal: AbortSignal | undefined, left?: () => boolean): void {
    this.#inbox.submit(
      conversationKey(inbound.channel, inbound.conversationId),
      { channel, ...participant, inbound, signal, ...(left ? { left } : {}) },
      quietWindowOf(channel),
    );
  }

  /**
   * One turn for the batch the inbox hands over (its `runBatch`), under the conversation's claim: while another
   * process's turn holds the conversation, the batch waits for it and goes into this process's next turn.
   */
  async runBatch(handedOver: Batch): Promise<void> {
    const batch = await this.#withoutLeft(handedOver);
    if (batch === undefined) return;
    await this.#runBatch(batch);
  }

  /**
   * Drops the messages whose client left before their turn began (`AcceptOptions.left`): nothing of their turn has
   * run, so nobody pays a model call no one waits for. The rest of the batch is answered; undefined when nothing is
   * left to answer. When the store cannot drop them, they are answered after all.
   */
  async #withoutLeft(batch: Batch): Promise<Batch | undefined> {
    const left = batch.filter((item) => item.left?.() === true);
    if (left.length === 0) return batch;
    const ids = left.map((item) => item.inbound.id);
    try {
      const dropped = await this.#deps.store.transaction((tx) => tx.inbound.drop(ids, this.#lease.owner));
      this.#deps.logger.info(
        { correlationIds: left.map((item) => item.inbound.correlationId), dropped },
        'message dropped: its client left before its turn began',
      );
    } catch (error) {
      this.#deps.logger.warn({ err: error, correlationId: left[0]!.inbound.correlationId }, 'could not drop messages whose client left; answering them');
      return batch;
    }
    for (const id of ids) this.#fresh.delete(id);
    const kept = batch.filter((item) => !left.includes(item));
    return isNonEmpty(kept) ? kept : undefined;
  }

  async #runBatch(handedOver: Batch): Promise<void> {
    const first = handedOver[0].inbound;
    // Messages this process just accepted belong to no turn yet: only others need the store's word.
    const fresh = handedOver.map((item) => this.#fresh.delete(item.inbound.id)).every(Boolean);
    let claim: TurnClaim | undefined;
    try {
      claim = await this.#ownership.claim(first.channel, first.conversationId, first.sessionId, [...new Set(handedOver.map((item) => item.user.id))]);
    } catch (error) {
      this.#deps.logger.error({ err: error, correlationId: first.correlationId }, 'could not claim the conversation; trying the turn again shortly');
      await this.#retryLater(handedOver);
      return;
    }
    if (claim === undefined) {
      this.#awaitOwner(handedOver, fresh);
      return;
    }
    const turn: ClaimedTurn = { claim, ended: false };
    try {
      // Another process's turn ran since: it may have answered these messages, or be part-way through them.
      await this.#runClaimed(handedOver, fresh && !claim.takenFromAnother, turn);
    } finally {
      if (!turn.ended) await this.#ownership.release(claim);
    }
  }

  /** A turn of the conversation runs in another process: the batch is queued again once it may be done. */
  #awaitOwner(batch: Batch, fresh: boolean): void {
    this.#deps.logger.debug({ correlationId: batch[0].inbound.correlationId }, 'another process is answering this conversation; its turn goes first');
    const retry = setTimeout(
      () => {
        if (this.#isStopped()) return;
        for (const item of batch) {
          if (fresh) this.#fresh.add(item.inbound.id);
          this.#inbox.submit(conversationKey(item.inbound.channel, item.inbound.conversationId), item);
        }
      },
      Math.max(20, Math.min(OWNER_POLL_MS, Math.floor(this.#lease.leaseMs / 3))),
    );
    retry.unref();
  }

  async #runClaimed(handedOver: Batch, fresh: boolean, turn: ClaimedTurn): Promise<void> {
    const lease = this.#lease;
    const { claim } = turn;
    // A turn a crash cut off resumes with the batch it started with; the other messages wait for the next turn.
    let formed: Awaited<ReturnType<typeof formBatch>>;
    let askAgain: ToolApproval | undefined;
    try {
      const held = await this.#held(handedOver, claim);
      if (held === true) return;
      if (held !== false) askAgain = held;
      formed = fresh ? { messages: handedOver, later: [] } : await formBatch(this.#deps.store, handedOver, lease);
    } catch (error) {
      this.#deps.logger.error({ err: error, correlationId: handedOver[0].inbound.correlationId }, 'could not read the inbox; trying the turn again shortly');
      await this.#retryLater(handedOver);
      return;
    }
    const { messages: formedBatch, resume, later } = formed;
    later.forEach((item) => this.queue(item.channel, item, item.inbound, item.signal, item.left));
    if (formedBatch === undefined) return;
    const { due, exhausted } = byAttempts(formedBatch, this.#maxTurnAttempts);
    try {
      // The last turn under the claim ends it in its closing write.
      if (isNonEmpty(exhausted)) await this.#giveUp(exhausted, exhausted.length === formedBatch.length ? resume : undefined, turn, !isNonEmpty(due));
      if (isNonEmpty(due)) await this.#answer(due, due.length === formedBatch.length ? resume : undefined, turn, askAgain);
    } catch (error) {
      if (!(error instanceof FencedOut)) throw error;
      this.#deps.metrics.turnsFencedOut.inc();
      this.#deps.logger.warn({ correlationId: formedBatch[0].inbound.correlationId, token: claim.fence.token }, error.message);
      // The new owner may not have taken these messages (it answered others of the conversation): they are asked
      // for again once it is done, and the store says whether anyone answered them meanwhile.
      this.#awaitOwner(formedBatch, false);
    }
  }

  /**
   * Whether an operator paused the conversation: then its messages stay stored and queued, leased to nobody, and
   * no turn answers them until it is resumed (see `Pipeline.answerHeld`). Asked of the store when the turn is about
   * to start (after the quiet window; the claim's statement reads it), so a pause made by any process holds it; a
   * turn already running finishes.
   */
  async #held(batch: Batch, claim: TurnClaim): Promise<boolean | ToolApproval> {
    const first = batch[0].inbound;
    if (!claim.paused) return false;
    // Held for an approval request: the person it asks may answer in words (yes, no, or unclear: asked again once).
    const pending = await this.#deps.store.approvals.pendingFor(first.sessionId);
    const answering =
      pending?.by === 'person' && batch.every(({ inbound }) => inbound.channel === pending.channel && inbound.accountId === pending.accountId)
        ? answerInWords(batch[batch.length - 1]!.inbound.text)
        : undefined;
    if (answering === 'unclear' && (await this.#deps.store.approvals.askAgain(pending!.id))) return pending!;
    // The store decides again in one statement: a resume since the read above lets the turn run after all.
    const held = await this.#deps.store.inbound.hold(batch.map((item) => item.inbound.id));
    if (held === 0) return false;
    if (answering !== undefined) {
      // Yes or no (or unclear a second time: declined): the words join the waiting turn as the answer it goes on with.
      const decision = answering === 'yes' ? 'approved' : 'declined';
      const outcome = await this.#approvals().decide(
        pending!.id,
        decision,
        { kind: 'person', channel: first.channel, accountId: first.accountId },
        {
          answer: batch.map(({ inbound }) => inbound),
          ...(answering === 'unclear' ? { reason: 'no clear answer after being asked again' } : {}),
        },
      );
      this.#deps.logger.info(
        { correlationId: first.correlationId, approvalId: pending!.id, answer: answering, outcome: outcome.kind },
        'approval answered in words',
      );
      return true;
    }
    this.#deps.logger.info(
      { correlationId: first.correlationId, sessionId: first.sessionId, held },
      'conversation paused by an operator: messages stored, held until it is resumed',
    );
    return true;
  }

  async #answer(batch: Batch, resume: TurnRequest['resume'], turn: ClaimedTurn, askAgain?: ToolApproval): Promise<void> {
    const lease = this.#lease;
    const first = batch[0];
    if (batch.length > 1) {
      this.#deps.logger.info(
        { correlationId: first.inbound.correlationId, joined: batch.slice(1).map((item) => item.inbound.correlationId) },
        'messages answered together',
      );
    }
    if (resume) this.#deps.logger.warn({ correlationId: first.inbound.correlationId, turnId: resume.id }, 'resuming a turn a stopped process left unfinished');
    const stop = this.#deps.metrics.turnSeconds.startTimer();
    const key = conversationKey(first.inbound.channel, first.inbound.conversationId);
    let plan: AbortController | undefined;
    const interrupt = () => {
      plan = new AbortController();
      this.#interruptible.set(key, plan);
      return plan.signal;
    };
    const interruptible = this.#deps.replies.actions.interruptOnNewMessage;
    const closing = closingFence(turn);
    const outcome = await runTurn(this.#deps, {
      messages: batch,
      lease,
      fence: turn.claim.check,
      endClaim: closing.endClaim,
      ...(resume ? { resume } : {}),
      ...(askAgain ? { askAgain } : {}),
      ...(interruptible ? { interrupt } : {}),
    }).finally(() => {
      if (plan !== undefined && this.#interruptible.get(key) === plan) this.#interruptible.delete(key);
    });
    const seconds = stop();
    closing.settle(outcome !== undefined);
    if (!outcome) {
      await this.#retryLater(batch);
      return;
    }
    this.#deps.logger.info(
      {
        correlationId: outcome.correlationId,
        sessionId: outcome.sessionId,
        status: outcome.status,
        ms: Math.round(seconds * 1000),
        inputTokens: outcome.usage.inputTokens,
        outputTokens: outcome.usage.outputTokens,
        cost: outcome.usage.cost,
      },
      'turn finished',
    );
  }

  /**
   * Nothing could be stored (the database failed or refused the turn): the messages stay in the inbox and are tried
   * again after a backoff, the attempt counted in the store first (by this process while it runs; by the next one,
   * through their leases and once the backoff passed, if it stops first).
   */
  async #retryLater(batch: readonly AcceptedMessage[]): Promise<void> {
    const attempts = Math.max(...batch.map((item) => item.inbound.attempts));
    const delayMs = retryDelayMs(this.#lease.leaseMs, attempts);
    try {
      await this.#deps.store.inbound.retryLater(
        batch.map((item) => item.inbound.id),
        delayMs,
      );
    } catch (error) {
      this.#deps.logger.error({ err: error, correlationId: batch[0]?.inbound.correlationId }, 'could not record a failed turn attempt; trying again anyway');
    }
    const retry = setTimeout(() => {
      // Checked when it fires: a Palaver closed meanwhile leaves them to its successor.
      if (!this.#isStopped()) batch.forEach((item) => this.queue(item.channel, item, { ...item.inbound, attempts: item.inbound.attempts + 1 }, undefined));
    }, delayMs);
    retry.unref();
  }

  /**
   * Messages whose turns failed `maxTurnAttempts` times: answered with the stored apology, without the model. When
   * not even that can be stored, they are marked abandoned so nobody takes them again; when the database cannot
   * even do that, they are tried again later (still without the model).
   */
  async #giveUp(batch: Batch, resume: TurnRequest['resume'], turn: ClaimedTurn, lastUnderClaim: boolean): Promise<void> {
    const ids = batch.map((item) => item.inbound.id);
    const where = {
      correlationId: batch[0].inbound.correlationId,
      joined: batch.slice(1).map((item) => item.inbound.correlationId),
      attempts: batch[0].inbound.attempts,
    };
    const closing = lastUnderClaim ? closingFence(turn) : undefined;
    const outcome = await runTurn(this.#deps, {
      messages: batch,
      lease: this.#lease,
      attemptsExhausted: true,
      fence: turn.claim.check,
      ...(closing ? { endClaim: closing.endClaim } : {}),
      ...(resume ? { resume } : {}),
    });
    closing?.settle(outcome !== undefined);
    if (!outcome) {
      try {
        await this.#deps.store.inbound.markAbandoned(ids);
      } catch (error) {
        this.#deps.logger.error({ ...where, err: error }, 'could not give up on a message; trying again later');
        await this.#retryLater(batch);
        return;
      }
      // Not left `running`: the conversation's last turn failed.
      for (const sessionId of new Set(batch.map((item) => item.inbound.sessionId))) {
        await this.#deps.store.sessions
          .setStatus(sessionId, 'failed')
          .catch((error: unknown) => this.#deps.logger.warn({ ...where, err: error }, 'could not mark the session failed'));
      }
      this.#deps.metrics.turnsAbandoned.inc(batch.length);
      // Logged last, once the store and the metric say so too: whoever reads the log line can rely on both.
      this.#deps.logger.error(where, 'message abandoned: neither an answer nor an apology could be stored');
      return;
    }
    this.#deps.metrics.turnsAbandoned.inc(batch.length);
  }
}

/** A claim and whether a turn's closing write ended it (then the runner has nothing left to release). */
interface ClaimedTurn {
  readonly claim: TurnClaim;
  ended: boolean;
}

/**
 * The closing fence of the last turn under a claim, which ends the claim in that write. Whether it did is known once
 * the turn returns: with an outcome, its closing write committed (`settle(true)`); a closing write that used the fence
 * and then rolled back (or a reply plan that keeps the claim) leaves the release to the runner.
 */
function closingFence(turn: ClaimedTurn): { readonly endClaim: (tx: Store) => Promise<void>; settle(closed: boolean): void } {
  let used = false;
  return {
    endClaim: async (tx) => {
      used = false;
      await turn.claim.end(tx);
      used = true;
    },
    settle: (closed) => {
      if (closed && used) turn.ended = true;
    },
  };
}

/** Longest wait before a batch whose conversation another process is answering asks for it again. */
const OWNER_POLL_MS = 250;

function isNonEmpty<T>(items: readonly T[]): items is readonly [T, ...T[]] {
  return items.length > 0;
}
