import type { ChannelCapabilities } from '../domain/ports/channel.js';

/** A reply that may leave: its whole text, and the parts it is sent in; `cutFrom`: its length before a cut. */
export type CheckedReply =
  | { readonly ok: true; readonly text: string; readonly parts: readonly string[]; readonly cutFrom?: number }
  | { readonly ok: false; readonly problem: string };

/** The longest reply, and the notice a longer one ends with after the cut (made only when needed). */
export interface ReplyLimit {
  readonly maxChars: number;
  readonly notice: () => string;
}

/**
 * The reply step: model output is checked before it can reach the person, cut to `limit`, then split to the
 * channel's limit. Empty text is refused (the turn answers with an apology instead). A reply in actions mode is a
 * plan, checked by `reply-plan/check-plan.ts` instead.
 */
export function checkReply(text: string, capabilities: ChannelCapabilities, limit?: ReplyLimit): CheckedReply {
  const trimmed = text.trim();
  if (!trimmed) return { ok: false, problem: 'the model returned no text' };
  const cut = limit === undefined || trimmed.length <= limit.maxChars ? undefined : cutReply(trimmed, limit.maxChars, limit.notice());
  const reply = cut ?? trimmed;
  return { ok: true, text: reply, parts: splitReply(reply, capabilities.maxMessageChars), ...(cut === undefined ? {} : { cutFrom: trimmed.length }) };
}

/**
 * `text` cut to at most `max` characters with `notice` on a paragraph of its own at the end: at the last paragraph
 * break, sentence end or space that fits (as {@link splitReply} cuts), so the person never gets half a word.
 */
export function cutReply(text: string, max: number, notice: string): string {
  if (text.length <= max) return text;
  const room = Math.max(1, max - notice.length - 2);
  return `${text.slice(0, cutPoint(text, room)).trimEnd()}\n\n${notice}`;
}

// Made on the first reply long enough to split: building a segmenter loads ICU's sentence data (~15 ms).
let sentences: Intl.Segmenter | undefined;

/**
 * Splits `text` into parts of at most `max` UTF-16 units (what Telegram and most channels count): at the last
 * paragraph break that fits, else the last sentence end (Unicode sentence boundaries, any language), else the last
 * space, else at `max` itself (never inside a surrogate pair). Whitespace at the cuts is dropped.
 */
export function splitReply(text: string, max: number | null): string[] {
  if (max === null || text.length <= max) return [text];
  if (max < 1) throw new RangeError(`A message limit must be at least 1 character, got ${max}.`);
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const cut = cutPoint(rest, max);
    const part = rest.slice(0, cut).trimEnd();
    if (part) parts.push(part);
    rest = rest.slice(cut).trimStart();
  }
  if (rest) parts.push(rest);
  return parts;
}

function cutPoint(text: string, max: number): number {
  const window = text.slice(0, max);
  // A break is worth taking only if the part before it is not a sliver of the limit (and never empty).
  const least = Math.max(1, Math.floor(max / 4));
  const paragraph = window.lastIndexOf('\n\n');
  if (paragraph >= least) return paragraph;
  let sentenceEnd = 0;
  // The window's last segment may be a sentence cut short by the window: only boundaries inside it count.
  sentences ??= new Intl.Segmenter(undefined, { granularity: 'sentence' });
  for (const segment of sentences.segment(text.slice(0, max + 1))) {
    const end = segment.index + segment.segment.length;
    if (end <= max) sentenceEnd = end;
  }
  if (sentenceEnd >= least) return sentenceEnd;
  const space = Math.max(window.lastIndexOf(' '), window.lastIndexOf('\n'));
  if (space >= least) return space;
  const code = text.charCodeAt(max - 1);
  // Never inside a surrogate pair, unless the pair alone is wider than the limit.
  return code >= 0xd800 && code <= 0xdbff && max > 1 ? max - 1 : max;
}
