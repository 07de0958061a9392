/**
 * What the Telegram channel says by itself (not the agent): command replies, refusals, the bot's commands and
 * description. A small catalogue in the four languages Palaver speaks; `{name}` is the agent's name. To move into
 * `src/i18n/` once that exists.
 */
export interface ChannelTexts {
  readonly greeting: string;
  readonly resetDone: string;
  readonly voiceFailed: string;
  readonly voiceOff: string;
  readonly tooLong: string;
  readonly unreadable: string;
  readonly busy: string;
  readonly resetForbidden: string;
  readonly commandStart: string;
  readonly commandReset: string;
  readonly description: string;
  readonly shortDescription: string;
}

export type CatalogueLanguage = 'en' | 'ru' | 'uk' | 'zh';

export const CATALOGUE: Readonly<Record<CatalogueLanguage, ChannelTexts>> = {
  en: {
    greeting: 'Hello! I am {name}. Write me a message, or send a voice message, and I will answer. /reset starts our conversation afresh.',
    resetDone: 'Done: we start afresh. I no longer see our earlier messages.',
    voiceFailed: 'Sorry, I could not make out your voice message. Could you try again, or write it as text?',
    voiceOff: 'Sorry, I cannot listen to voice messages here. Could you write it as text?',
    tooLong: 'Sorry, that message is too long for me. Could you send it in shorter parts?',
    unreadable: 'Sorry, I could not read that message. Could you send it as plain text?',
    busy: 'I am still answering your earlier messages; please wait for my reply before sending more.',
    resetForbidden: 'Only the person who started this conversation can reset it.',
    commandStart: 'Say hello and see what I can do',
    commandReset: 'Start the conversation afresh',
    description: '{name}: an assistant that answers in this chat. Write a message or send a voice message to begin.',
    shortDescription: '{name}: an assistant that answers in this chat.',
  },
  ru: {
    greeting: 'Здравствуйте! Я {name}. Напишите мне или отправьте голосовое сообщение — я отвечу. /reset начинает разговор заново.',
    resetDone: 'Готово: начинаем заново. Прежних сообщений я больше не вижу.',
    voiceFailed: 'Извините, я не смог разобрать голосовое сообщение. Попробуйте ещё раз или напишите текстом.',
    voiceOff: 'Извините, здесь я не могу слушать голосовые сообщения. Напишите, пожалуйста, текстом.',
    tooLong: 'Извините, это сообщение слишком длинное для меня. Отправьте его, пожалуйста, частями покороче.',
    unreadable: 'Извините, я не смог прочитать это сообщение. Отправьте его, пожалуйста, обычным текстом.',
    busy: 'Я ещё отвечаю на ваши прежние сообщения; пожалуйста, дождитесь ответа.',
    resetForbidden: 'Начать разговор заново может только тот, кто его начал.',
    commandStart: 'Поздороваться и узнать, что я умею',
    commandReset: 'Начать разговор заново',
    description: '{name} — помощник, который отвечает в этом чате. Напишите сообщение или отправьте голосовое, чтобы начать.',
    shortDescription: '{name} — помощник, который отвечает в этом чате.',
  },
  uk: {
    greeting: 'Вітаю! Я {name}. Напишіть мені або надішліть голосове повідомлення — я відповім. /reset починає розмову заново.',
    resetDone: 'Готово: починаємо заново. Попередніх повідомлень я більше не бачу.',
    voiceFailed: 'Вибачте, я не зміг розібрати голосове повідомлення. Спробуйте ще раз або напишіть текстом.',
    voiceOff: 'Вибачте, тут я не можу слухати голосові повідомлення. Напишіть, будь ласка, текстом.',
    tooLong: 'Вибачте, це повідомлення задовге для мене. Надішліть його, будь ласка, коротшими частинами.',
    unreadable: 'Вибачте, я не зміг прочитати це повідомлення. Надішліть його, будь ласка, звичайним текстом.',
    busy: 'Я ще відповідаю на ваші попередні повідомлення; будь ласка, дочекайтеся відповіді.',
    resetForbidden: 'Почати розмову заново може лише той, хто її розпочав.',
    commandStart: 'Привітатися й дізнатися, що я вмію',
    commandReset: 'Почати розмову заново',
    description: '{name} — помічник, який відповідає в цьому чаті. Напишіть повідомлення або надішліть голосове, щоб почати.',
    shortDescription: '{name} — помічник, який відповідає в цьому чаті.',
  },
  zh: {
    greeting: '你好！我是{name}。给我发消息或语音，我会回复你。/reset 可以重新开始对话。',
    resetDone: '好了：我们重新开始。我不再看到之前的消息。',
    voiceFailed: '抱歉，我没能听清你的语音消息。请再试一次，或者用文字发送。',
    voiceOff: '抱歉，我在这里无法收听语音消息。请用文字发送。',
    tooLong: '抱歉，这条消息对我来说太长了。请分成几条较短的消息发送。',
    unreadable: '抱歉，我无法读取这条消息。请用纯文本发送。',
    busy: '我还在回复你之前的消息，请等我回复后再发送。',
    resetForbidden: '只有发起这个对话的人才能重新开始它。',
    commandStart: '打个招呼，看看我能做什么',
    commandReset: '重新开始对话',
    description: '{name}：在这个聊天中回答问题的助手。发送文字或语音消息即可开始。',
    shortDescription: '{name}：在这个聊天中回答问题的助手。',
  },
};

/** The catalogue language for a Telegram `language_code` (`ru`, `uk`, `zh-hans`, `en-US`, …); English otherwise. */
export function languageOf(code: string | undefined): CatalogueLanguage {
  const base = (code ?? '').toLowerCase().split(/[-_]/)[0];
  return base === 'ru' || base === 'uk' || base === 'zh' ? base : 'en';
}

/** One text in the person's language, with `{name}` filled in. */
export function say(code: string | undefined, key: keyof ChannelTexts, name = ''): string {
  return CATALOGUE[languageOf(code)][key].replaceAll('{name}', name);
}
