import type { HandoffNotice } from './handoff-notice.js';

/** The ways operators are told, as the metric `palaver_handoff_notices_total{via}` names them. */
export type NoticeVia = 'webhook' | 'telegram';

/**
 * One way of telling operators (a webhook, a Telegram chat). `send` delivers one round's notice once: it is never
 * retried, since the handoff's next round tells them again.
 */
export interface NoticeWay {
  readonly via: NoticeVia;
  /**
   * Delivers the notice; resolves once the other side took it.
   * @throws Error when it did not (unreachable, refused, no answer in time, or `signal` aborted: Palaver is closing).
   */
  send(notice: HandoffNotice, signal: AbortSignal): Promise<void>;
}
