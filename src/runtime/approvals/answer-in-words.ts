/**
 * Reads a person's answer to an approval question written in words (a channel without buttons, or a person who
 * typed instead of pressing): yes, no, or something else. Only a short, plain answer counts: "yes", "да, давай",
 * "好的" — a longer message is something else, and the person is asked again (once) rather than guessed at.
 */
export type AnswerInWords = 'yes' | 'no' | 'unclear';

/** The most words a plain answer has ("yes, go ahead please"). */
const MAX_ANSWER_WORDS = 4;

const YES = new Set([
  // en
  'yes',
  'y',
  'yeah',
  'yep',
  'yup',
  'sure',
  'ok',
  'okay',
  'approve',
  'approved',
  'confirm',
  'confirmed',
  'go',
  'ahead',
  'do',
  'it',
  'please',
  'fine',
  // ru
  'да',
  'ага',
  'конечно',
  'давай',
  'давайте',
  'подтверждаю',
  'ок',
  'хорошо',
  'согласен',
  'согласна',
  'можно',
  'пожалуйста',
  // uk
  'так',
  'авжеж',
  'звісно',
  'звичайно',
  'підтверджую',
  'гаразд',
  'добре',
  'згоден',
  'згодна',
  'можна',
  'будь',
  'ласка',
  'давайте',
]);

const NO = new Set([
  // en
  'no',
  'n',
  'nope',
  'nah',
  "don't",
  'dont',
  'cancel',
  'stop',
  'decline',
  'declined',
  'not',
  // ru
  'нет',
  'не',
  'неа',
  'отмена',
  'отменить',
  'отмени',
  'стоп',
  'надо',
  // uk
  'ні',
  'треба',
  'скасувати',
  'скасуй',
  'відміна',
]);

/** Chinese answers, read as the whole message (no spaces between words). */
const ZH_YES = new Set(['是', '是的', '好', '好的', '可以', '行', '确认', '同意', '对', '嗯', '没问题']);
const ZH_NO = new Set(['不', '不是', '不要', '否', '取消', '不用', '不行', '不可以', '别', '算了']);

/** Yes, no, or unclear, for the text of one message (the newest, when several came together). */
export function answerInWords(text: string): AnswerInWords {
  const plain = text
    .toLowerCase()
    .replace(/[’`]/g, "'")
    // Punctuation, emoji and symbols go; letters, digits and the apostrophe of "don't" stay.
    .replace(/[^\p{L}\p{N}'\s]/gu, ' ')
    .trim();
  if (plain === '') return 'unclear';
  const compact = plain.replace(/\s+/g, '');
  if (ZH_YES.has(compact)) return 'yes';
  if (ZH_NO.has(compact)) return 'no';
  const words = plain.split(/\s+/);
  if (words.length > MAX_ANSWER_WORDS) return 'unclear';
  // "No" wins over any yes-word beside it ("no, please don't"); a yes needs every word to be a yes-word.
  if (words.some((word) => NO.has(word))) return words.every((word) => NO.has(word) || YES.has(word)) ? 'no' : 'unclear';
  return words.every((word) => YES.has(word)) ? 'yes' : 'unclear';
}
