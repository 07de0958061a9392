/**
 * What a streaming channel needs to know when a reply part is sent after its text was already streamed: is this
 * part on screen already, or must the streamed text be withdrawn and the sent text shown instead?
 *
 * The pipeline streams the reply as `text_delta`s, then sends the stored reply part by part. The person must see
 * exactly the sent text, once: a part the stream already showed is not shown again, and streamed text that no part
 * matches (a reply the pipeline changed, or cut) is withdrawn. Pure and synchronous, so web and terminal share it.
 *
 * Whitespace around a part is not compared: splitting a reply into parts may trim it.
 */
export class StreamedReply {
  /** Streamed text that no sent part has matched yet. */
  #pending = '';
  #streamed = false;
  readonly #shownParts: string[] = [];

  /** True when text was streamed since the last `reset` (a tool call, a withdrawal). */
  get isStreaming(): boolean {
    return this.#streamed;
  }

  /** Parts that matched streamed text so far; they must be shown again if the streamed text is withdrawn. */
  get shownParts(): readonly string[] {
    return this.#shownParts;
  }

  /**
   * True when the stream showed text that no sent part matched, so what is on screen is not exactly the reply: the
   * caller withdraws the streamed text and shows `shownParts` fresh. Asked at the end of a turn.
   */
  get hasUnsentText(): boolean {
    return this.#streamed && (this.#pending.trim() !== '' || this.#shownParts.length === 0);
  }

  append(delta: string): void {
    this.#pending += delta;
    this.#streamed = true;
  }

  /** Forget the streamed text: it stays on screen as it is (text before a tool call) or was withdrawn. */
  reset(): void {
    this.#pending = '';
    this.#streamed = false;
    this.#shownParts.length = 0;
  }

  /**
   * Matches one sent part against the streamed text.
   * - `shown`: the part is the next streamed text; it is consumed, nothing needs showing.
   * - `new`: nothing is streamed; show the part.
   * - `mismatch`: text was streamed but this part is not it: withdraw the streamed text, then show `replay` (the
   *   parts that had matched) and this part. The state is reset.
   */
  match(part: string): { readonly kind: 'shown' | 'new' } | { readonly kind: 'mismatch'; readonly replay: readonly string[] } {
    if (!this.#streamed) return { kind: 'new' };
    const rest = this.#pending.trimStart();
    const text = part.trim();
    if (text !== '' && rest.startsWith(text)) {
      this.#pending = rest.slice(text.length);
      this.#shownParts.push(part);
      return { kind: 'shown' };
    }
    const replay = [...this.#shownParts];
    this.reset();
    return { kind: 'mismatch', replay };
  }

  /** True when every streamed character was matched by a sent part (the streamed message can be closed). */
  get isComplete(): boolean {
    return this.#streamed && this.#shownParts.length > 0 && this.#pending.trim() === '';
  }
}
