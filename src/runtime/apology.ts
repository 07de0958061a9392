/** Short apologies sent when a turn fails, by primary language subtag. */
const APOLOGIES: Readonly<Record<string, string>> = {
  en: 'Sorry, I cannot answer right now. Please try again in a moment.',
  ru: 'Извините, сейчас я не могу ответить. Пожалуйста, попробуйте чуть позже.',
  uk: 'Вибачте, зараз я не можу відповісти. Будь ласка, спробуйте трохи згодом.',
  de: 'Entschuldigung, ich kann gerade nicht antworten. Bitte versuche es gleich noch einmal.',
  fr: 'Désolé, je ne peux pas répondre pour le moment. Réessayez dans un instant.',
  es: 'Lo siento, ahora no puedo responder. Inténtalo de nuevo en un momento.',
  it: 'Mi dispiace, al momento non posso rispondere. Riprova tra poco.',
  pt: 'Desculpe, não consigo responder agora. Tente novamente em instantes.',
  zh: '抱歉，我现在无法回答，请稍后再试。',
  ja: '申し訳ありません、今は応答できません。しばらくしてからもう一度お試しください。',
};

/** The apology in `language` (a BCP-47 tag), English when there is none for it. */
export function apologyFor(language: string): string {
  const primary = language.toLowerCase().split('-')[0] ?? 'en';
  return APOLOGIES[primary] ?? APOLOGIES.en!;
}
