import { PalaverError } from '../../domain/errors.js';
import type { HandoffNotice } from './handoff-notice.js';
import type { NoticeWay } from './notice-way.js';
import { webhookSignature } from './webhook-signature.js';

/** The JSON body of a webhook notice (docs/operator-actions.md, "Operators are told"). */
export interface HandoffWebhookPayload {
  readonly type: 'handoff.requested';
  readonly handoffId: string;
  readonly round: number;
  readonly sessionId: string;
  readonly userId: string;
  readonly channel: string | null;
  readonly reason: string;
  readonly source: string;
  readonly requestedAt: string;
  readonly person: { readonly name: string | null };
  readonly lastMessages: readonly { readonly role: string; readonly text: string; readonly at: string }[];
  readonly url: string | null;
}

export interface WebhookNoticesOptions {
  /** `operators.notify.webhookUrl`. */
  readonly url: string;
  /** `operators.notify.webhookSecret`. */
  readonly secret: string;
  /** What to call out with (Palaver's outgoing HTTP client: its connections and proxy). */
  readonly fetch: typeof fetch;
  /** How long the receiver has to answer. Default 10 s. */
  readonly timeoutMs?: number;
  /** The wall clock of `webhook-timestamp`, which receivers hold against their own. Default `Date.now`. */
  readonly clock?: () => number;
}

/**
 * Tells operators by POSTing the notice as JSON to a webhook, signed as the Standard Webhooks spec says
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`). A round's `webhook-id` is the handoff's id and the round,
 * so a receiver that sees one twice (it cannot, from Palaver) could tell. Only a 2xx answer counts: a redirect is
 * not followed (the signature was made for this URL's receiver, and a redirect could carry it elsewhere).
 */
export class WebhookNotices implements NoticeWay {
  readonly via = 'webhook';
  readonly #options: WebhookNoticesOptions;

  constructor(options: WebhookNoticesOptions) {
    this.#options = options;
  }

  async send(notice: HandoffNotice, signal: AbortSignal): Promise<void> {
    const body = JSON.stringify(webhookPayload(notice));
    const id = `${notice.handoffId}_${notice.round}`;
    const timestamp = Math.floor((this.#options.clock ?? Date.now)() / 1000);
    const response = await this.#options.fetch(this.#options.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Palaver handoff notices',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': webhookSignature(this.#options.secret, id, timestamp, body),
      },
      body,
      redirect: 'manual',
      signal: AbortSignal.any([signal, AbortSignal.timeout(this.#options.timeoutMs ?? 10_000)]),
    });
    // Nothing of the answer is read but its status; the connection goes back to the pool.
    await response.body?.cancel().catch(() => undefined);
    if (response.status < 200 || response.status >= 300) {
      throw new PalaverError(
        'webhook_refused',
        `the operators' webhook answered HTTP ${response.status}${response.status < 400 ? ' (redirects are not followed)' : ''}`,
      );
    }
  }
}

export function webhookPayload(notice: HandoffNotice): HandoffWebhookPayload {
  return {
    type: 'handoff.requested',
    handoffId: notice.handoffId,
    round: notice.round,
    sessionId: notice.sessionId,
    userId: notice.userId,
    channel: notice.channel,
    reason: notice.reason,
    source: notice.source,
    requestedAt: notice.requestedAt.toISOString(),
    person: { name: notice.person.name },
    lastMessages: notice.lastMessages.map((message) => ({ role: message.role, text: message.text, at: message.at.toISOString() })),
    url: notice.url,
  };
}
