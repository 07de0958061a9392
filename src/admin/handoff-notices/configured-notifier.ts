import type { PalaverConfig } from '../../config/index.js';
import type { Store } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';
import type { PalaverMetrics } from '../../observability/metrics.js';
import { HandoffNotifier } from './handoff-notifier.js';
import type { NoticeWay } from './notice-way.js';
import { TelegramNotices, type TelegramChatPoster } from './telegram-notices.js';
import { WebhookNotices } from './webhook-notices.js';

export interface ConfiguredNotifierDeps {
  readonly store: Store;
  /** The running Telegram bot's way to post to a chat; undefined when the bot does not run in this process. */
  readonly telegram: TelegramChatPoster | undefined;
  /** Palaver's outgoing HTTP client. */
  readonly fetch: typeof fetch;
  readonly logger: Logger;
  readonly metrics: PalaverMetrics;
  /** Epoch ms, as the turns that open handoffs see it. */
  readonly now: () => number;
}

/**
 * The notifier `operators.notify` describes: a webhook when `webhookUrl` is set, the operators' Telegram chat when
 * `telegramChatId` is set and the bot runs here. Undefined when no way is left: then nothing claims the rounds, and
 * a process that has a way sends them.
 */
export function configuredHandoffNotifier(operators: PalaverConfig['operators'], deps: ConfiguredNotifierDeps): HandoffNotifier | undefined {
  const { notify } = operators;
  const ways: NoticeWay[] = [];
  if (notify.webhookUrl !== undefined && notify.webhookSecret !== undefined) {
    ways.push(new WebhookNotices({ url: notify.webhookUrl, secret: notify.webhookSecret, fetch: deps.fetch }));
  }
  if (notify.telegramChatId !== undefined && deps.telegram !== undefined) ways.push(new TelegramNotices(deps.telegram, notify.telegramChatId));
  if (ways.length === 0) return undefined;
  return new HandoffNotifier({
    handoffs: deps.store.handoffs,
    conversations: deps.store.operators,
    ways,
    repeatMinutes: notify.repeatMinutes,
    repeats: notify.repeats,
    dashboardUrl: operators.dashboardUrl,
    logger: deps.logger.child({ component: 'handoff-notices' }),
    count: (via, outcome) => deps.metrics.handoffNotices.inc({ via, outcome }),
    now: deps.now,
  });
}
