// Telling operators that a conversation waits for a person (issue 39): the notifier, its rounds and its ways.
export { HandoffNotifier, type HandoffNotifierOptions } from './handoff-notifier.js';
export { composeHandoffNotice, conversationLink, type HandoffNotice, type NoticeConversations } from './handoff-notice.js';
export type { NoticeVia, NoticeWay } from './notice-way.js';
export { WebhookNotices, webhookPayload, type HandoffWebhookPayload, type WebhookNoticesOptions } from './webhook-notices.js';
export { webhookKey, webhookSignature } from './webhook-signature.js';
export { TelegramNotices, telegramNoticeMessage, type NoticeMessage, type TelegramChatPoster } from './telegram-notices.js';
export { configuredHandoffNotifier, type ConfiguredNotifierDeps } from './configured-notifier.js';
