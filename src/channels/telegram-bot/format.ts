// The formatter moved to `../telegram/` (the user account uses it too); these names stay for existing imports.
export {
  TELEGRAM_MAX_MESSAGE_CHARS,
  toTelegramMessage,
  splitTelegramMessage,
  type TelegramMessage,
  type TelegramEntity as MessageEntity,
} from '../telegram/index.js';
