/** The user-account channel's name: its `InboundMessage.channel`, dedupe key prefix and session lease key. */
export const TELEGRAM_USER_CHANNEL = 'telegram-user';
