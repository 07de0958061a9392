/**
 * Streams one string field of a JSON object while the model is still writing it: fed the raw JSON fragments, it
 * hands out the decoded text of `field` as it grows, so a structured answer (`{"reply": "…"}`) can still reach the
 * person as live text. Only the first occurrence of the key is read; a field whose value is not a string yields
 * nothing. The complete output is validated separately.
 */
export class JsonStringFieldStream {
  readonly #keyPattern: RegExp;
  #buffer = '';
  /** Where the value's unread characters start in the buffer; -1 while the key has not been seen. */
  #position = -1;
  #done = false;

  constructor(field: string) {
    this.#keyPattern = new RegExp(`"${field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"\\s*:\\s*"`);
  }

  /** Adds a raw fragment; returns the newly decoded text of the field (possibly empty). */
  push(fragment: string): string {
    if (this.#done) return '';
    this.#buffer += fragment;
    if (this.#position < 0) {
      const match = this.#keyPattern.exec(this.#buffer);
      if (!match) return '';
      this.#position = match.index + match[0].length;
    }
    let text = '';
    let at = this.#position;
    while (at < this.#buffer.length) {
      const char = this.#buffer[at]!;
      if (char === '"') {
        this.#done = true;
        break;
      }
      if (char !== '\\') {
        text += char;
        at += 1;
        continue;
      }
      // An escape: wait for the whole of it before decoding.
      const next = this.#buffer[at + 1];
      if (next === undefined) break;
      if (next === 'u') {
        const hex = this.#buffer.slice(at + 2, at + 6);
        if (hex.length < 4) break;
        text += String.fromCharCode(Number.parseInt(hex, 16));
        at += 6;
        continue;
      }
      text += ESCAPES[next] ?? next;
      at += 2;
    }
    this.#position = at;
    return text;
  }
}

const ESCAPES: Readonly<Record<string, string>> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', '"': '"', '\\': '\\', '/': '/' };
