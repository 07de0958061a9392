import type { Api } from 'grammy';
import type { TelegramEntity } from '../telegram/index.js';
import type { Logger } from '../../observability/logger.js';

export interface DraftTarget {
  readonly chatId: number;
  readonly threadId?: number;
}

interface Draft {
  readonly target: DraftTarget;
  draftId: number;
  text: string;
  /** The text last shown, to skip a repeat. */
  shown: string;
  lastAt: number;
  timer: NodeJS.Timeout | undefined;
  /** The reply was sent (or the turn ended): no more draft updates. */
  finished: boolean;
  sending: Promise<void>;
}

/**
 * Live drafts of replies being written, in private chats (`sendMessageDraft`, Bot API 9.5+): the streamed text is
 * shown at most once per `intervalMs` and the draft is finalised by the reply's `sendMessage` (Telegram drops the
 * draft when the bot sends a message). One draft per turn, keyed by the turn, so no chat ever sees another's.
 *
 * A `discard` replaces the text with an empty draft (Telegram shows "Thinking…"); a draft that Telegram refuses
 * turns drafts off for that turn, and a method Telegram does not know (an old self-hosted Bot API server) off for good.
 */
export class DraftStreamer {
  readonly #api: Api;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #format: (text: string) => { text: string; entities: TelegramEntity[] };
  readonly #drafts = new Map<string, Draft>();
  #nextDraftId = 1 + Math.floor(Math.random() * 1_000_000_000);
  #unsupported = false;

  constructor(options: { api: Api; logger: Logger; intervalMs?: number; format: (text: string) => { text: string; entities: TelegramEntity[] } }) {
    this.#api = options.api;
    this.#logger = options.logger;
    this.#intervalMs = options.intervalMs ?? 1_000;
    this.#format = options.format;
  }

  /** More text of the reply being written in `key`'s turn. */
  append(key: string, target: DraftTarget, delta: string): void {
    if (this.#unsupported) return;
    let draft = this.#drafts.get(key);
    if (!draft) {
      draft = { target, draftId: this.#newDraftId(), text: '', shown: '', lastAt: 0, timer: undefined, finished: false, sending: Promise.resolve() };
      this.#drafts.set(key, draft);
    }
    if (draft.finished) return;
    draft.text += delta;
    this.#schedule(draft);
  }

  /** The streamed text is not the reply: show an empty ("Thinking…") draft under a new id instead. */
  discard(key: string): void {
    const draft = this.#drafts.get(key);
    if (!draft || draft.finished) return;
    draft.text = '';
    draft.draftId = this.#newDraftId();
    this.#schedule(draft);
  }

  /** The reply is being sent: stop updating the draft (and wait for an update in flight, so it cannot land after). */
  async finish(key: string): Promise<void> {
    const draft = this.#drafts.get(key);
    if (!draft) return;
    draft.finished = true;
    clearTimeout(draft.timer);
    await draft.sending;
  }

  /** The turn is over: forget its draft. */
  forget(key: string): void {
    const draft = this.#drafts.get(key);
    if (!draft) return;
    draft.finished = true;
    clearTimeout(draft.timer);
    this.#drafts.delete(key);
  }

  close(): void {
    for (const key of [...this.#drafts.keys()]) this.forget(key);
  }

  #schedule(draft: Draft): void {
    if (draft.timer) return;
    const wait = Math.max(0, draft.lastAt + this.#intervalMs - Date.now());
    if (wait === 0) {
      // The first text shows at once; later updates at most once per interval.
      draft.lastAt = Date.now();
      draft.sending = draft.sending.then(() => this.#show(draft));
      return;
    }
    draft.timer = setTimeout(() => {
      draft.timer = undefined;
      draft.sending = draft.sending.then(() => this.#show(draft));
    }, wait);
    draft.timer.unref?.();
  }

  async #show(draft: Draft): Promise<void> {
    if (draft.finished || this.#unsupported) return;
    const text = draft.text.trim();
    if (text === draft.shown && text !== '') return;
    draft.lastAt = Date.now();
    draft.shown = text;
    let message: { text: string; entities: TelegramEntity[] };
    try {
      message = this.#format(tail(text));
    } catch {
      message = { text: tail(text), entities: [] };
    }
    if (message.text.length > 4096) message = { text: tail(text), entities: [] };
    try {
      await this.#api.sendMessageDraft(draft.target.chatId, draft.draftId, message.text, {
        ...(message.entities.length > 0 ? { entities: message.entities } : {}),
        ...(draft.target.threadId === undefined ? {} : { message_thread_id: draft.target.threadId }),
      });
    } catch (error) {
      draft.finished = true;
      const code = (error as { error_code?: number }).error_code;
      if (code === 404) {
        this.#unsupported = true;
        this.#logger.warn({ err: error }, 'this Bot API server has no sendMessageDraft (Bot API 9.5+); live drafts are off');
      } else {
        this.#logger.info({ err: error, chatId: draft.target.chatId }, 'telegram draft refused; this reply is shown when sent');
      }
    }
  }

  #newDraftId(): number {
    const id = this.#nextDraftId;
    this.#nextDraftId = this.#nextDraftId >= 2_000_000_000 ? 1 : this.#nextDraftId + 1;
    return id;
  }
}

/** The last 4096 characters a draft can hold (the reply's first part is sent whole anyway). */
function tail(text: string): string {
  return text.length <= 4096 ? text : text.slice(text.length - 4096);
}
