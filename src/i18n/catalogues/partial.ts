import type { Catalogue } from './en.js';

/**
 * Languages Palaver does not fully speak, with the few texts a person must still understand (the apology sent when
 * a turn fails). Every other text falls back to the default language.
 */
export const partialCatalogues: Readonly<Record<string, Partial<Catalogue>>> = {
  de: {
    'turn.apology': 'Entschuldigung, ich kann gerade nicht antworten. Bitte versuche es gleich noch einmal.',
    'turn.errorReference': 'Fehlercode: {errorId}',
  },
  fr: {
    'turn.apology': 'Désolé, je ne peux pas répondre pour le moment. Réessayez dans un instant.',
    'turn.errorReference': 'Référence de l’erreur : {errorId}',
  },
  es: { 'turn.apology': 'Lo siento, ahora no puedo responder. Inténtalo de nuevo en un momento.', 'turn.errorReference': 'Referencia del error: {errorId}' },
  it: { 'turn.apology': 'Mi dispiace, al momento non posso rispondere. Riprova tra poco.', 'turn.errorReference': 'Codice errore: {errorId}' },
  pt: { 'turn.apology': 'Desculpe, não consigo responder agora. Tente novamente em instantes.', 'turn.errorReference': 'Código do erro: {errorId}' },
  ja: { 'turn.apology': '申し訳ありません、今は応答できません。しばらくしてからもう一度お試しください。', 'turn.errorReference': 'エラー番号: {errorId}' },
};
