// What the two Telegram channels (the bot, the user account) share; free of grammY and of any one client's types.
export { TELEGRAM_MAX_MESSAGE_CHARS, type TelegramEntity, type TelegramMessage } from './entities.js';
export { formatReplyPart, toTelegramMessage } from './format.js';
export { splitTelegramMessage } from './split.js';
export { toTlEntities } from './tl-entities.js';
export { describeMedia, type TelegramMedia } from './media.js';
export {
  AUDIO_PLACEHOLDER,
  describeContent,
  quotedText,
  withQuote,
  withTranscript,
  type AudioMedia,
  type MessageText,
  type TelegramContent,
} from './message-text.js';
export { audioFileOf, transcribeAudio, type AudioFile, type Transcribe, type TranscribeAudioOptions, type Transcription } from './transcription.js';
export { TELEGRAM_REACTION_EMOJI, TELEGRAM_REACTION_EMOJI_ACCEPTED, telegramReaction } from './reactions.js';
