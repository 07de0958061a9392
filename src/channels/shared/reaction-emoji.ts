/** Longest reaction, in UTF-16 code units: a family or a flag with its modifiers fits, a sentence does not. */
const MAX_REACTION_UNITS = 16;

/** Code points an emoji is made of: pictographs, keycap bases, skin tones, flags' letters, tags, joiners, selectors. */
const EMOJI_PARTS = /^(?:\p{Extended_Pictographic}|\p{Emoji_Component}|\u200d|\ufe0e|\ufe0f)+$/u;
/** At least one part that is a picture on its own (a pictograph, a flag's letter, a keycap): `1` or `#` is not. */
const EMOJI_PICTURE = /\p{Extended_Pictographic}|\p{Regional_Indicator}|\u20e3/u;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * True when `text` is one emoji a channel may show as a reaction: a single grapheme, at most 16 UTF-16 code units,
 * made only of emoji code points. Reactions come from the model, so this keeps markup, control characters, words
 * and whole sentences off a page or a terminal that shows them beside the person's message.
 */
export function isReactionEmoji(text: string): boolean {
  if (text === '' || text.length > MAX_REACTION_UNITS) return false;
  if (!EMOJI_PARTS.test(text) || !EMOJI_PICTURE.test(text)) return false;
  let count = 0;
  for (const _ of graphemes.segment(text)) if (++count > 1) return false;
  return true;
}
