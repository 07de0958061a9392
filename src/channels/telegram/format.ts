import type { Nodes, PhrasingContent, Root, Table } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmStrikethroughFromMarkdown } from 'mdast-util-gfm-strikethrough';
import { gfmTableFromMarkdown } from 'mdast-util-gfm-table';
import { gfmStrikethrough } from 'micromark-extension-gfm-strikethrough';
import { gfmTable } from 'micromark-extension-gfm-table';
import { TELEGRAM_MAX_MESSAGE_CHARS, type TelegramEntity, type TelegramMessage } from './entities.js';

/**
 * Turns the model's Markdown (CommonMark, GFM strikethrough and tables) into plain text plus Telegram message
 * entities, so a message can never fail with "can't parse entities": whatever the text holds, it is sent as text.
 *
 * - `**bold**`, `*italic*`, `~~strike~~` (double tilde only: "~5 min" stays text), `` `code` ``, fenced and indented
 *   code blocks (`pre` with the fence's language), `[text](url)` and reference links (`text_link`) and quotes
 *   (`blockquote`) become entities;
 * - bare and `<…>` URLs stay plain text (Telegram links them itself);
 * - headings become bold lines, lists `• ` / `1. ` lines (nested ones indented), tables a monospace `pre` block,
 *   images their alt text linked to the image, a rule `———`; HTML is kept as text.
 *
 * Offsets and lengths are UTF-16 code units, as Telegram counts them (an emoji outside the BMP counts 2). Entities
 * follow Telegram's nesting rules: they nest and never cross; `code`/`pre` contain nothing and bold, italic and
 * strikethrough are cut around them; a link inside a link and a quote inside a quote are flattened; inline code
 * inside a link loses its monospace (the link wins). Leading and trailing whitespace is trimmed (Telegram would).
 * Pure; never throws on any string.
 */
export function toTelegramMessage(markdown: string): TelegramMessage {
  // A lone surrogate cannot be sent as UTF-8; U+FFFD takes its place and keeps every offset.
  const source = markdown.replace(LONE_SURROGATE, '\uFFFD');
  let tree: Root;
  try {
    tree = fromMarkdown(source, {
      extensions: [gfmStrikethrough({ singleTilde: false }), gfmTable()],
      mdastExtensions: [gfmStrikethroughFromMarkdown(), gfmTableFromMarkdown()],
    });
  } catch {
    // micromark parses any string; this only guards against a future regression. Plain text is always safe.
    return { text: source.trim(), entities: [] };
  }
  const writer = new Writer(source, collectDefinitions(tree));
  writer.blocks(tree.children, '\n\n');
  const { text, entities } = writer.finish();
  if (!text && source.trim()) return { text: source.trim(), entities: [] };
  return { text, entities };
}

/**
 * One reply part (the pipeline has already cut it to `TELEGRAM_MAX_MESSAGE_CHARS`) as the message to send: the
 * formatted text, or the part as plain text when formatting leaves nothing or would push it over Telegram's limit
 * (list markers and table padding add characters). `onError` hears of a formatter failure, which then also falls
 * back to plain text. Never throws (unless `onError` does).
 */
export function formatReplyPart(text: string, onError?: (error: unknown) => void): TelegramMessage {
  try {
    const formatted = toTelegramMessage(text);
    if (formatted.text.trim() === '' || formatted.text.length > TELEGRAM_MAX_MESSAGE_CHARS) return { text, entities: [] };
    return formatted;
  } catch (error) {
    onError?.(error);
    return { text, entities: [] };
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

type Definitions = ReadonlyMap<string, string>;

function collectDefinitions(tree: Root): Definitions {
  const definitions = new Map<string, string>();
  // Iterative: a reply may nest thousands of quotes or lists, deeper than the call stack.
  const stack: Nodes[] = [tree];
  for (let node = stack.pop(); node; node = stack.pop()) {
    if (node.type === 'definition') {
      if (!definitions.has(node.identifier)) definitions.set(node.identifier, node.url);
    } else if ('children' in node) {
      for (let index = node.children.length - 1; index >= 0; index -= 1) stack.push(node.children[index] as Nodes);
    }
  }
  return definitions;
}

/** Blocks and inline nodes nested deeper than this are written as plain text (no call-stack overflow, no runaway indent). */
const MAX_DEPTH = 24;

/** Block nodes after which flat text starts a new line. */
const LINE_BLOCKS = new Set(['paragraph', 'heading', 'code', 'html', 'thematicBreak', 'tableRow', 'listItem']);

/** The text of any subtree without formatting, one line per block; iterative, so any depth is safe. */
function flatText(root: Nodes): string {
  const out: string[] = [];
  const stack: (Nodes | string)[] = [root];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    if (item.type === 'definition') continue;
    if (item.type === 'break') out.push('\n');
    else if (item.type === 'image' || item.type === 'imageReference') out.push(item.alt ?? '');
    else if ('value' in item && typeof item.value === 'string') out.push(item.value);
    if (LINE_BLOCKS.has(item.type)) stack.push('\n');
    if ('children' in item) for (let index = item.children.length - 1; index >= 0; index -= 1) stack.push(item.children[index] as Nodes);
  }
  return out.join('').replace(/\n+/g, '\n').trim();
}

/** Entities that may be cut into pieces (Telegram's "splittable" kinds); they may not overlap code or pre. */
const SPLITTABLE = new Set(['bold', 'italic', 'underline', 'strikethrough', 'spoiler']);

/** An entity without its position (`Omit` over each member of the union). */
type EntityKind = TelegramEntity extends infer E ? (E extends TelegramEntity ? Omit<E, 'offset' | 'length'> : never) : never;

interface OpenState {
  /** Inside a `text_link`: links and code entities are not nested into it. */
  link: boolean;
  /** Inside a `blockquote`: quotes are not nested into it. */
  quote: boolean;
}

/** Appends text and records entities by UTF-16 offset (JavaScript string length is UTF-16 code units). */
class Writer {
  private readonly chunks: string[] = [];
  private length = 0;
  private readonly entities: TelegramEntity[] = [];
  /** Written after every line break: the indentation of the list items we are in. */
  private indent = '';
  private readonly state: OpenState = { link: false, quote: false };
  /** How many blocks and inline nodes we are inside. */
  private depth = 0;

  constructor(
    private readonly source: string,
    private readonly definitions: Definitions,
  ) {}

  finish(): TelegramMessage {
    const raw = this.chunks.join('');
    const start = raw.length - raw.trimStart().length;
    const text = raw.trim();
    const end = start + text.length;
    const entities: TelegramEntity[] = [];
    for (const entity of cutAroundCode(this.entities)) {
      const from = Math.max(entity.offset, start);
      const to = Math.min(entity.offset + entity.length, end);
      if (to > from) entities.push({ ...entity, offset: from - start, length: to - from });
    }
    entities.sort((a, b) => a.offset - b.offset || b.length - a.length);
    return { text, entities };
  }

  /** Writes text; line breaks in it continue at the current indentation. */
  write(text: string): void {
    if (!text) return;
    const indented = this.indent ? text.replaceAll('\n', `\n${this.indent}`) : text;
    this.chunks.push(indented);
    this.length += indented.length;
  }

  /** Runs `body` and marks what it wrote as one entity (dropped when empty). */
  span(entity: EntityKind, body: () => void): void {
    const offset = this.length;
    body();
    const length = this.length - offset;
    if (length > 0) this.entities.push({ ...entity, offset, length } as TelegramEntity);
  }

  blocks(nodes: readonly Nodes[], separator: string): void {
    let first = true;
    for (const node of nodes) {
      if (node.type === 'definition') continue;
      if (!first) this.write(separator);
      first = false;
      this.block(node);
    }
  }

  block(node: Nodes): void {
    if (this.depth >= MAX_DEPTH) {
      this.write(flatText(node));
      return;
    }
    this.depth += 1;
    try {
      this.blockAt(node);
    } finally {
      this.depth -= 1;
    }
  }

  private blockAt(node: Nodes): void {
    switch (node.type) {
      case 'paragraph':
        this.inline(node.children);
        return;
      case 'heading':
        this.span({ type: 'bold' }, () => this.inline(node.children));
        return;
      case 'thematicBreak':
        this.write('———');
        return;
      case 'blockquote': {
        if (this.state.quote) {
          this.blocks(node.children, '\n');
          return;
        }
        this.state.quote = true;
        this.span({ type: 'blockquote' }, () => this.blocks(node.children, '\n'));
        this.state.quote = false;
        return;
      }
      case 'code':
        this.span(node.lang ? { type: 'pre', language: node.lang } : { type: 'pre' }, () => this.write(node.value));
        return;
      case 'html':
        this.write(node.value);
        return;
      case 'list': {
        let number = node.start ?? 1;
        let first = true;
        for (const item of node.children) {
          if (!first) this.write('\n');
          first = false;
          if (item.children.length === 0) {
            // An empty item is most often a lone `*` or `-` the model meant as text: keep what it wrote.
            const { start, end } = item.position ?? {};
            this.write(start?.offset !== undefined && end?.offset !== undefined ? this.source.slice(start.offset, end.offset) : '');
            number += 1;
            continue;
          }
          const marker = node.ordered ? `${number}. ` : '• ';
          number += 1;
          this.write(marker);
          const outer = this.indent;
          this.indent = outer + ' '.repeat(marker.length);
          this.blocks(item.children, '\n');
          this.indent = outer;
        }
        return;
      }
      case 'table':
        this.table(node);
        return;
      default:
        // Phrasing content where a block was expected (never from the parser, but keep it as text), or an
        // unknown node: write whatever text it has.
        if ('children' in node) this.inline(node.children as PhrasingContent[]);
        else if ('value' in node && typeof node.value === 'string') this.write(node.value);
    }
  }

  inline(nodes: readonly PhrasingContent[]): void {
    for (const node of nodes) this.phrase(node);
  }

  phrase(node: PhrasingContent): void {
    if (this.depth >= MAX_DEPTH) {
      this.write(flatText(node));
      return;
    }
    this.depth += 1;
    try {
      this.phraseAt(node);
    } finally {
      this.depth -= 1;
    }
  }

  private phraseAt(node: PhrasingContent): void {
    switch (node.type) {
      case 'text':
        this.write(node.value);
        return;
      case 'strong':
        this.span({ type: 'bold' }, () => this.inline(node.children));
        return;
      case 'emphasis':
        this.span({ type: 'italic' }, () => this.inline(node.children));
        return;
      case 'delete':
        this.span({ type: 'strikethrough' }, () => this.inline(node.children));
        return;
      case 'inlineCode':
        if (this.state.link) this.write(node.value);
        else this.span({ type: 'code' }, () => this.write(node.value));
        return;
      case 'break':
        this.write('\n');
        return;
      case 'html':
        this.write(node.value);
        return;
      case 'link':
        this.link(node.url, node.children);
        return;
      case 'linkReference':
        this.link(this.definitions.get(node.identifier), node.children);
        return;
      case 'image':
        this.image(node.url, node.alt ?? '');
        return;
      case 'imageReference':
        this.image(this.definitions.get(node.identifier), node.alt ?? '');
        return;
      default:
        if ('children' in node) this.inline(node.children as PhrasingContent[]);
        else if ('value' in node && typeof node.value === 'string') this.write(node.value);
    }
  }

  private link(url: string | undefined, children: readonly PhrasingContent[]): void {
    const target = url === undefined ? undefined : linkTarget(url);
    const label = plainText(children);
    if (!label.trim()) {
      // `[](url)`: nothing to click on, so show the address itself.
      this.write(url ?? '');
      return;
    }
    // `<https://…>`, `<a@b.c>`, `[https://x](https://x)`: Telegram links the bare text itself.
    if (target === undefined || this.state.link || sameAddress(label, url ?? '')) {
      this.inline(children);
      // `[write to us](mailto:a@b.c)`: the address is the point, and Telegram links a bare e-mail address itself.
      const mail = /^mailto:([^?\s]+)/i.exec(url ?? '')?.[1];
      if (mail && !sameAddress(label, url ?? '')) this.write(` (${mail})`);
      return;
    }
    this.state.link = true;
    this.span({ type: 'text_link', url: target }, () => this.inline(children));
    this.state.link = false;
  }

  private image(url: string | undefined, alt: string): void {
    const target = url === undefined ? undefined : linkTarget(url);
    if (!alt.trim()) {
      this.write(url ?? '');
      return;
    }
    if (target === undefined || this.state.link) {
      this.write(alt);
      return;
    }
    this.span({ type: 'text_link', url: target }, () => this.write(alt));
  }

  /** A table as a monospace block, columns padded to their widest cell (counted in code points). */
  private table(node: Table): void {
    const rows = node.children.map((row) => row.children.map((cell) => plainText(cell.children).replaceAll('\n', ' ').trim()));
    const columns = Math.max(0, ...rows.map((row) => row.length));
    const widths: number[] = Array.from({ length: columns }, (_, column) => Math.max(1, ...rows.map((row) => codePoints(row[column] ?? ''))));
    const align = node.align ?? [];
    const line = (row: readonly string[]): string =>
      widths
        .map((width, column) => pad(row[column] ?? '', width, align[column] ?? null))
        .join(' | ')
        .trimEnd();
    const lines: string[] = [];
    rows.forEach((row, index) => {
      lines.push(line(row));
      if (index === 0) lines.push(widths.map((width) => '-'.repeat(width)).join('-+-'));
    });
    this.span({ type: 'pre' }, () => this.write(lines.join('\n')));
  }
}

/** The visible text of inline content, without any formatting (for link labels and table cells). */
function plainText(nodes: readonly PhrasingContent[]): string {
  let text = '';
  for (const node of nodes) {
    if (node.type === 'break') text += '\n';
    else if (node.type === 'image' || node.type === 'imageReference') text += node.alt ?? '';
    else if ('value' in node && typeof node.value === 'string') text += node.value;
    else if ('children' in node) text += plainText(node.children as PhrasingContent[]);
  }
  return text;
}

/**
 * The URL a `text_link` may carry, or undefined when Telegram would refuse it: http(s) and tg links, and bare
 * domains (given https). Relative paths, `mailto:`, `javascript:` and the like stay as their text.
 */
function linkTarget(url: string): string | undefined {
  const trimmed = url.trim();
  if (!trimmed || /\s/.test(trimmed)) return undefined;
  if (/^(https?:\/\/[^/?#]|tg:\/\/\w)/i.test(trimmed)) return trimmed;
  if (/^[\p{L}\p{N}-]+(\.[\p{L}\p{N}-]+)*\.\p{L}{2,}(?::\d+)?(?:[/?#]|$)/u.test(trimmed)) return `https://${trimmed}`;
  return undefined;
}

function sameAddress(label: string, url: string): boolean {
  const bare = (value: string): string =>
    value
      .trim()
      .replace(/^(https?:\/\/|mailto:)/i, '')
      .replace(/\/$/, '')
      .toLowerCase();
  return bare(label) === bare(url);
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

function pad(text: string, width: number, align: 'left' | 'right' | 'center' | null): string {
  const room = width - codePoints(text);
  if (room <= 0) return text;
  if (align === 'right') return ' '.repeat(room) + text;
  if (align === 'center') {
    const left = Math.floor(room / 2);
    return ' '.repeat(left) + text + ' '.repeat(room - left);
  }
  return text + ' '.repeat(room);
}

/**
 * Telegram lets bold, italic, underline, strikethrough and spoiler contain anything except `code` and `pre`, so a
 * splittable entity that covers code is cut into the pieces around it (`**see `x`**` → "see " bold, "x" code).
 */
function cutAroundCode(entities: readonly TelegramEntity[]): TelegramEntity[] {
  const code = entities.filter((entity) => entity.type === 'code' || entity.type === 'pre').sort((a, b) => a.offset - b.offset);
  if (code.length === 0) return [...entities];
  const result: TelegramEntity[] = [];
  for (const entity of entities) {
    if (!SPLITTABLE.has(entity.type)) {
      result.push(entity);
      continue;
    }
    let from = entity.offset;
    const end = entity.offset + entity.length;
    for (const block of code) {
      const blockEnd = block.offset + block.length;
      if (blockEnd <= from || block.offset >= end) continue;
      if (block.offset > from) result.push({ ...entity, offset: from, length: block.offset - from });
      from = Math.max(from, blockEnd);
    }
    if (end > from) result.push({ ...entity, offset: from, length: end - from });
  }
  return result;
}
