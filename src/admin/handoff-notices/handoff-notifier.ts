import type { Handoff, HandoffRepository } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';
import { composeHandoffNotice, type HandoffNotice, type NoticeConversations } from './handoff-notice.js';
import type { NoticeVia, NoticeWay } from './notice-way.js';

export interface HandoffNotifierOptions {
  /** Where handoffs and their notice rounds are kept (`store.handoffs`), shared by every process. */
  readonly handoffs: HandoffRepository;
  /** What a notice reads of the conversation (`store.operators`). */
  readonly conversations: NoticeConversations;
  /** Every configured way of telling operators; each round goes through all of them. */
  readonly ways: readonly NoticeWay[];
  /** `operators.notify.repeatMinutes`: the time between two rounds while nobody takes the conversation. */
  readonly repeatMinutes: number;
  /** `operators.notify.repeats`: rounds after the first. */
  readonly repeats: number;
  /** `operators.dashboardUrl`: notices link to the conversation there. */
  readonly dashboardUrl?: string | undefined;
  readonly logger: Logger;
  /** Counts each notice by way and outcome (`palaver_handoff_notices_total`). */
  readonly count?: (via: NoticeVia, outcome: 'sent' | 'failed') => void;
  /** Epoch ms; decides which rounds are due. Default `Date.now`. */
  readonly now?: () => number;
  /** How often due rounds are looked for. Default 5000 ms. */
  readonly intervalMs?: number;
  /** Due handoffs taken up per look. Default 20. */
  readonly batch?: number;
}

/**
 * Tells operators that conversations wait for a person, in rounds: the first as soon as a handoff opens, then again
 * every `repeatMinutes` while nobody has taken it, `1 + repeats` rounds at most.
 *
 * The rounds live in the database (`store.handoffs`), not here: this process looks for due ones on a timer (and at
 * once when told of a new handoff with `notify`), and sends a round only after claiming it there (`claimNotice`),
 * which exactly one of the processes racing for it wins. So operators are told once per round however many
 * processes run, and a restart neither repeats a round nor loses the next. A round is claimed before it is sent: a
 * process that dies between the two loses that round, and the next round tells them again. A failed send is logged
 * and counted, never retried: the next round is the retry.
 *
 * @example
 * const notifier = new HandoffNotifier({ handoffs: store.handoffs, conversations: store.operators, ways, repeatMinutes: 10, repeats: 3, logger });
 * notifier.start();
 * void notifier.notify(handoff); // a turn just opened it
 * await notifier.close();
 */
export class HandoffNotifier {
  readonly #options: HandoffNotifierOptions;
  readonly #now: () => number;
  readonly #stopping = new AbortController();
  readonly #running = new Set<Promise<unknown>>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #started = false;

  constructor(options: HandoffNotifierOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Looks for due rounds now (rounds left due while no process ran) and then every `intervalMs`, until `close`. */
  start(): void {
    if (this.#started) throw new Error('HandoffNotifier.start() was called twice; one notifier runs one timer.');
    this.#started = true;
    const tick = async () => {
      await this.runDue();
      if (!this.#stopping.signal.aborted) this.#timer = setTimeout(() => void tick(), this.#options.intervalMs ?? 5_000).unref();
    };
    void tick();
  }

  /**
   * Tells operators of a handoff just opened (the turn's `onHandoff`), without waiting for the timer. Resolves once
   * its round is sent, or at once when it is not due or another process claimed it; never rejects.
   */
  notify(handoff: Handoff): Promise<void> {
    return this.#track(this.#round(handoff)).then(() => undefined);
  }

  /** Sends every round due now that this process claims. Resolves with how many rounds it claimed; never rejects. */
  runDue(): Promise<number> {
    return this.#track(this.#runDue());
  }

  /** Stops the timer, cancels sends under way (their rounds count as failed) and waits for them. Safe to call twice. */
  async close(): Promise<void> {
    this.#stopping.abort();
    clearTimeout(this.#timer);
    await Promise.allSettled([...this.#running]);
  }

  async #runDue(): Promise<number> {
    if (this.#stopping.signal.aborted) return 0;
    let due: Handoff[];
    try {
      due = await this.#options.handoffs.listDue(this.#now(), this.#options.batch ?? 20);
    } catch (error) {
      this.#options.logger.warn({ err: error }, 'due handoff notices could not be read; looking again later');
      return 0;
    }
    const claimed = await Promise.all(due.map((handoff) => this.#round(handoff)));
    return claimed.filter(Boolean).length;
  }

  /** Claims the handoff's next round when it is due, and sends it through every way. True when this process claimed it. */
  async #round(handoff: Handoff): Promise<boolean> {
    const now = this.#now();
    if (this.#stopping.signal.aborted || handoff.nextNoticeAt === null || handoff.nextNoticeAt.getTime() > now) return false;
    const rounds = 1 + this.#options.repeats;
    const round = handoff.notices + 1;
    const { logger } = this.#options;
    try {
      // More rounds sent than the config now allows (its repeats were lowered): the round is claimed to end the
      // notices, and not sent.
      const nextAt = round < rounds ? now + this.#options.repeatMinutes * 60_000 : null;
      if (!(await this.#options.handoffs.claimNotice(handoff, nextAt))) return false;
      if (round > rounds) return true;
    } catch (error) {
      logger.warn({ err: error, handoffId: handoff.id }, 'a handoff notice round could not be claimed; looking again later');
      return false;
    }
    let notice: HandoffNotice;
    try {
      notice = await composeHandoffNotice(handoff, { round, rounds }, this.#options.conversations, this.#options.dashboardUrl);
    } catch (error) {
      logger.warn(
        { err: error, handoffId: handoff.id, sessionId: handoff.sessionId, round },
        'a handoff notice could not be written; the next round tells operators',
      );
      for (const way of this.#options.ways) this.#options.count?.(way.via, 'failed');
      return true;
    }
    await Promise.all(this.#options.ways.map((way) => this.#send(way, notice)));
    return true;
  }

  async #send(way: NoticeWay, notice: HandoffNotice): Promise<void> {
    const fields = { handoffId: notice.handoffId, sessionId: notice.sessionId, round: notice.round, via: way.via };
    try {
      await way.send(notice, this.#stopping.signal);
      this.#options.count?.(way.via, 'sent');
      this.#options.logger.info(fields, 'operators told: a conversation waits for a person');
    } catch (error) {
      this.#options.count?.(way.via, 'failed');
      const nextRound = notice.round < notice.rounds ? 'the next round tells them again' : 'that was the last round';
      this.#options.logger.warn({ ...fields, err: error }, `operators could not be told of a handoff (${nextRound})`);
    }
  }

  /** Keeps work under way for `close` to wait for. */
  #track<T>(work: Promise<T>): Promise<T> {
    this.#running.add(work);
    void work.finally(() => this.#running.delete(work)).catch(() => undefined);
    return work;
  }
}
