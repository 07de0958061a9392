export { TelegramBotChannel, type TelegramBotChannelOptions, type Transcribe } from './telegram-bot-channel.js';
export { addressOf, conversationIdOf, TELEGRAM_BOT_CHANNEL, type ChatAddress } from './address.js';
